#!/usr/bin/env node
/**
 * `nestjs-idempotent-consumer-sql`: prints the SQL of the library's migrations (`schemaSql()`), in
 * order, for a service whose migrations are not TypeORM's. `--table <name>` for another table,
 * `--outbox-table <name>` for another outbox table, `--without-outbox` for none (a service without
 * the outbox), `--from <timestamp>` for only the migrations after one the database has run.
 */
import { parseArgs } from 'node:util';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { schemaSql, type SchemaMigrationSql } from '../migrations/schema-sql.js';
import { cliMessages } from './cli.messages.js';

/** The outbox's migrations, by name: the outbox table's. */
const OUTBOX_MIGRATION = /-outbox-/;

/** What to print on stdout and stderr, and the exit code, for the command's arguments. */
async function run(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const names = (await schemaSql()).map((migration) => migration.name);
  let values: { table?: string; 'outbox-table'?: string; 'without-outbox'?: boolean; from?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        table: { type: 'string' },
        'outbox-table': { type: 'string' },
        'without-outbox': { type: 'boolean' },
        from: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return { stdout: '', stderr: cliMessages.invalidArguments((error as Error).message), code: 2 };
  }
  if (values.help) {
    return { stdout: cliMessages.usage(names), stderr: '', code: 0 };
  }
  let migrations: SchemaMigrationSql[];
  try {
    migrations = await schemaSql(values.table, values['outbox-table']);
  } catch (error) {
    if (error instanceof IdempotencyOptionsError) {
      return { stdout: '', stderr: cliMessages.invalidTable(error.message), code: 2 };
    }
    throw error;
  }
  const { from } = values;
  const applied = from === undefined ? -1 : names.findIndex((name) => name === from || name.startsWith(`${from}-`));
  if (from !== undefined && applied < 0) {
    return { stdout: '', stderr: cliMessages.unknownFrom(from, names), code: 2 };
  }
  migrations = migrations.slice(applied + 1);
  if (values['without-outbox']) {
    migrations = migrations.filter((migration) => !OUTBOX_MIGRATION.test(migration.name));
  }
  if (migrations.length === 0) {
    return { stdout: '', stderr: cliMessages.upToDate(names[applied]), code: 0 };
  }
  return { stdout: migrations.map((migration) => migration.sql).join('\n'), stderr: '', code: 0 };
}

const { stdout, stderr, code } = await run(process.argv.slice(2));
process.stdout.write(stdout);
process.stderr.write(stderr);
process.exitCode = code;
