/** The message texts of the migrations' SQL, as `schemaSql()` records it. */
export const migrationMessages = {
  notRecordable: (migration: string, use: string) =>
    `${migration}.up() used ${use} of its QueryRunner, which plain SQL cannot carry: schemaSql() records only ` +
    "query(text) calls without parameters. Every migration of the library must send its SQL that way; this one is a bug of the library.",
} as const;
