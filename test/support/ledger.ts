import type { TestDatabase } from './test-database.js';

// Waiting for the effects of the credit handlers of the demo and the bench: the rows of
// `ledger_entries`, which every credit writes one of.

/** A database to count rows in: a suite's, or the bench's. */
type Queryable = Pick<TestDatabase, 'query'>;

/** How often a consumer round counts its effects in the database: the resolution of its end. */
const POLL_MS = 25;
/** A consumer round fails when its effects have not grown for this long (unless the caller gives its own). */
const STALL_MS = 30_000;

/**
 * Polls the ledger until it has `count` rows after id `last`; fails on more, or when they have not
 * grown for `stallMs` (a consumer under valgrind needs longer than a native one).
 */
export async function waitForEffects(database: Queryable, last: string, count: number, stallMs = STALL_MS): Promise<void> {
  let seen = -1;
  let grewAt = performance.now();
  for (;;) {
    const effects = await ledgerRowsAfter(database, last);
    if (effects === count) {
      return;
    }
    if (effects > count) {
      throw new Error(`${effects} ledger rows for ${count} messages: a message was handled twice`);
    }
    if (effects > seen) {
      seen = effects;
      grewAt = performance.now();
    } else if (performance.now() - grewAt > stallMs) {
      throw new Error(`the consumer stalled at ${effects} of ${count} messages for ${stallMs / 1000} s`);
    }
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}

/** The id of the last ledger row, the mark a round counts its effects from. */
export async function lastLedgerRow(database: Queryable): Promise<string> {
  const [{ last }] = await database.query<{ last: string }>('SELECT coalesce(max(id), 0) AS last FROM ledger_entries');
  return last;
}

export async function ledgerRowsAfter(database: Queryable, last: string): Promise<number> {
  return Number((await database.query<{ n: string }>(`SELECT count(*) AS n FROM ledger_entries WHERE id > ${Number(last)}`))[0].n);
}

/** Runs `load` and fails when it wrote a ledger row: a replay that ran the handler is not one. */
export async function expectNoNewLedgerRows<T>(database: Queryable, load: () => Promise<T>): Promise<T> {
  const before = await settledLedgerRows(database);
  const result = await load();
  const after = await settledLedgerRows(database);
  if (after !== before) {
    throw new Error(`the replay round ran the handler: ledger_entries went from ${before} to ${after} rows`);
  }
  return result;
}

/**
 * The ledger's row count once the requests still in flight when the previous load stopped (up to
 * one per connection) have committed: two readings 100 ms apart that agree.
 */
async function settledLedgerRows(database: Queryable): Promise<string> {
  const count = async () => (await database.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries'))[0].n;
  let previous = await count();
  for (;;) {
    await new Promise((done) => setTimeout(done, 100));
    const current = await count();
    if (current === previous) {
      return current;
    }
    previous = current;
  }
}
