import type { QueryResult } from './data-layer.js';

/**
 * Options of the module's own statements on MariaDB: numbers as mysql2 answers them (the `mariadb`
 * connector answers BIGINT as a BigInt otherwise); mysql2 ignores them.
 * @internal
 */
export const OWN_STATEMENT_OPTIONS = { bigIntAsNumber: true, insertIdAsNumber: true } as const;

/** The level of the module's own statements, which takes no gap locks that would hold up claims. */
const READ_COMMITTED = 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED';

/**
 * One of the module's own statements outside any claim (the purge, the health figures, the
 * operators' reads), on a connection of a MariaDB pool: at READ COMMITTED, committed on its own; in
 * one round trip where the connection takes several statements a query.
 * @param send Sends `sql` (with `?` placeholders) and its values; answers what the driver answered.
 * @param text The statement with `$1`, `$2`... placeholders.
 * @internal
 */
export async function ownStatement<Row>(
  send: (sql: string, values: unknown[]) => Promise<unknown>,
  multipleStatements: boolean,
  text: string,
  parameters: readonly unknown[],
): Promise<QueryResult<Row>> {
  const [sql, values] = positional(text, parameters);
  if (multipleStatements) {
    const [, answer] = (await send(`${READ_COMMITTED};\n${sql}`, values)) as unknown[];
    return toQueryResult(answer);
  }
  await send(READ_COMMITTED, []);
  return toQueryResult(await send(sql, values));
}

/**
 * `text` with its `$1`, `$2`... placeholders as MariaDB's `?`, and the values in the order they stand.
 * @internal
 */
export function positional(text: string, parameters: readonly unknown[]): [string, unknown[]] {
  const values: unknown[] = [];
  const sql = text.replace(/\$(\d+)/g, (_, index: string) => {
    values.push(parameters[Number(index) - 1]);
    return '?';
  });
  return [sql, values];
}

/**
 * What a MariaDB driver answered, as the module reads it: rows, or the count of rows changed.
 * @internal
 */
export function toQueryResult<Row>(answer: unknown): QueryResult<Row> {
  return Array.isArray(answer) ? { rows: answer as Row[], rowCount: answer.length } : { rows: [], rowCount: (answer as { affectedRows: number }).affectedRows };
}
