import type { BenchDatabase } from './bench-database.js';

/** How often a consumer round counts its effects in the database: the resolution of its end. */
const POLL_MS = 25;
/** A consumer round fails when its effects have not grown for this long. */
const STALL_MS = 30_000;

/** Polls the ledger until it has `count` rows after id `last`; fails on more, or when they stop coming. */
export async function waitForEffects(database: BenchDatabase, last: string, count: number): Promise<void> {
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
    } else if (performance.now() - grewAt > STALL_MS) {
      throw new Error(`the consumer stalled at ${effects} of ${count} messages for ${STALL_MS / 1000} s`);
    }
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}

/** The id of the last ledger row, the mark a round counts its effects from. */
export async function lastLedgerRow(database: BenchDatabase): Promise<string> {
  const [{ last }] = await database.query<{ last: string }>('SELECT coalesce(max(id), 0) AS last FROM ledger_entries');
  return last;
}

export async function ledgerRowsAfter(database: BenchDatabase, last: string): Promise<number> {
  return Number((await database.query<{ n: string }>(`SELECT count(*) AS n FROM ledger_entries WHERE id > ${Number(last)}`))[0].n);
}
