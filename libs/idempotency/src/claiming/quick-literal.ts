/** A character that a string literal must escape: a quote or a backslash. */
const ESCAPED = /['\\]/;

/**
 * `escape` (the connection's `escapeLiteral`) with a shortcut for the common value that holds
 * neither a quote nor a backslash: that value between quotes, which is what `escape` answers for
 * it, without a walk over its characters. Consumer names, keys and recorded headers mostly are such.
 */
export function quickLiteral(escape: (value: string) => string): (value: string) => string {
  return (value) => (ESCAPED.test(value) ? escape(value) : `'${value}'`);
}
