import { NestedTransactions } from './nested-transactions.js';

describe('NestedTransactions', () => {
  const refused = (reason: 'waited' | 'undone', waitMs: number) => new Error(`${reason} ${waitMs}`);
  const one = {};
  const other = {};

  it("opens a lease's transactions at once, nested; another lease's when they have all ended", async () => {
    const nested = new NestedTransactions(1_000, refused);
    expect(nested.open(one)).toBeUndefined();
    expect(nested.open(one)).toBeUndefined();
    let opened = false;
    const waiting = nested.open(other)!.then(() => (opened = true));
    nested.close(one, true);
    await Promise.resolve();
    expect(opened).toBe(false);
    nested.close(one, false);
    await waiting;
    expect(nested.owns(other)).toBe(true);
    expect(nested.refusedCommit).toBeUndefined();
  });

  it('refuses a transaction that waited longer than waitMs, and the claim with it', async () => {
    const nested = new NestedTransactions(10, refused);
    nested.open(one);
    await expect(nested.open(other)).rejects.toThrow('waited 10');
    expect(nested.refusedCommit?.message).toBe('waited 10');
  });

  it("refuses the claim when a rollback undoes another lease's statement; a commit keeps it", () => {
    const nested = new NestedTransactions(1_000, refused);
    nested.open(one);
    nested.sent(other);
    nested.close(one, true);
    expect(nested.refusedCommit).toBeUndefined();
    nested.open(one);
    nested.sent(one);
    nested.sent(other);
    nested.close(one, false);
    expect(nested.refusedCommit?.message).toBe('undone 1000');
  });

  it('refuses every wait when the claim ends, and starts afresh', async () => {
    const nested = new NestedTransactions(1_000, refused);
    nested.open(one);
    const waiting = nested.open(other);
    nested.ended(() => new Error('ended'));
    await expect(waiting).rejects.toThrow('ended');
    expect(nested.depth).toBe(0);
    expect(nested.owns(one)).toBe(false);
  });
});
