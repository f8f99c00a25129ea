import pg from 'pg';
import { quickLiteral } from './quick-literal.js';

describe('quickLiteral, the claim statements\' string literals', () => {
  const escapeLiteral = (value: string) => pg.escapeLiteral(value);
  let escaped = 0;
  const literal = quickLiteral((value) => {
    escaped++;
    return escapeLiteral(value);
  });

  it("answers what the connection's escapeLiteral answers, for every kind of value", () => {
    for (const value of ['', 'order-7', 'POST /credits', '{"Content-Type":"application/json"}', "O'Brien", 'a\\b', "it's a \\ path", 'é ü 日本']) {
      expect(literal(value)).toBe(escapeLiteral(value));
    }
  });

  it('leaves the connection only the values that hold a quote or a backslash', () => {
    escaped = 0;
    literal('order-7');
    literal('W/"25-abc"');
    expect(escaped).toBe(0);
    literal("O'Brien");
    literal('a\\b');
    expect(escaped).toBe(2);
  });
});
