/**
 * Whether the NATS subject filter `filter` (tokens, `*` one token, `>` the rest) takes in every
 * subject `subject` may be. In `subject`, `*` stands for a token not known in advance (the inbox
 * id the plugin appends to `deliverTo`) and `>` for any further tokens: only a wildcard of
 * `filter` covers them.
 */
export function subjectCovers(filter: string, subject: string): boolean {
  const wanted = filter.split('.');
  const given = subject.split('.');
  for (let index = 0; index < wanted.length; index++) {
    const token = wanted[index];
    if (token === '>') {
      return index < given.length;
    }
    const other = given[index];
    if (other === undefined || other === '>' || (token !== '*' && token !== other) || (other === '*' && token !== '*')) {
      return false;
    }
  }
  return wanted.length === given.length;
}
