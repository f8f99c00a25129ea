/** The SQL of the start-up check of the store's schema. `table` is a validated plain identifier. */

/** The claim's functions with their arguments, as `to_regprocedure` reads them. */
export function claimSignature(table: string): string {
  return `"${table}_claim"(text, text, text, text, bigint)`;
}
export function recordSignature(table: string): string {
  return `"${table}_record"(text, text, integer, json, bytea)`;
}

/**
 * One catalogue query for the table, its columns and both functions, all resolved through the
 * connection's `search_path` as the claim's statements are. It reads the catalogue only, never the
 * table, and fails on none of them missing. Its parameters are `catalogueParameters(table)`.
 */
export const catalogueStatement = `SELECT to_regclass($1) IS NOT NULL AS "tableFound",
       COALESCE((SELECT json_agg(json_build_object('name', attname, 'type', format_type(atttypid, atttypmod), 'notNull', attnotnull))
                 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped), '[]'::json) AS columns,
       to_regprocedure($2) IS NOT NULL AS "claimFound",
       to_regprocedure($3) IS NOT NULL AS "recordFound"`;

export function catalogueParameters(table: string): string[] {
  return [`"${table}"`, claimSignature(table), recordSignature(table)];
}
