/** The characters MariaDB reads as escapes in a quoted string (unless `NO_BACKSLASH_ESCAPES`), and how mysql2 writes them. */
const ESCAPES: Readonly<Record<string, string>> = { '\0': '\\0', '\b': '\\b', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\x1a': '\\Z', '"': '\\"', "'": "\\'", '\\': '\\\\' };

/**
 * A value as a MariaDB string literal, quotes included, escaped as mysql2's `escape()` does it.
 * @internal
 */
export function mariaDbLiteral(value: string): string {
  // eslint-disable-next-line no-control-regex
  return `'${value.replace(/[\0\b\t\n\r\x1a"'\\]/g, (character) => ESCAPES[character])}'`;
}
