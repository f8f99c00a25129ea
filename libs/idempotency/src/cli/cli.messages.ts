/** The texts of the `nestjs-idempotent-consumer-sql` command. */
export const cliMessages = {
  usage: (names: readonly string[]) =>
    'Usage: nestjs-idempotent-consumer-sql [--table <name>] [--outbox-table <name> | --without-outbox] [--from <timestamp>]\n\n' +
    "Prints the SQL of nestjs-idempotent-consumer's migrations, in the order they must run, for a migration tool\n" +
    "other than TypeORM's (Prisma, Drizzle, Kysely, psql...).\n\n" +
    '  --table <name>      the table, as IdempotencyModule.forRoot({ tableName }) names it (default: processed_messages)\n' +
    '  --outbox-table <name>  the outbox table, as its outbox.tableName names it (default: outbox_messages)\n' +
    '  --without-outbox    leave out the outbox table, for a service that does not use the outbox\n' +
    '  --from <timestamp>  print only the migrations after this one, the last of the library\'s your database has run\n' +
    `                      (one of ${names.map((name) => name.split('-')[0]).join(', ')})\n` +
    '  --help              print this text\n',
  invalidArguments: (problem: string) => `nestjs-idempotent-consumer-sql: ${problem}\nRun it with --help for its options.\n`,
  invalidTable: (problem: string) => `nestjs-idempotent-consumer-sql: ${problem}\n`,
  unknownFrom: (from: string, names: readonly string[]) =>
    `nestjs-idempotent-consumer-sql: --from ${JSON.stringify(from)} is none of the library's migrations; they are, in order:\n` +
    names.map((name) => `  ${name}\n`).join(''),
  upToDate: (from: string) => `-- nestjs-idempotent-consumer-sql: no migration after ${from}: nothing to run.\n`,
} as const;
