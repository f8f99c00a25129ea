import type { DataSource } from 'typeorm';
import { ClaimTransaction } from '../../libs/idempotency/src/claiming/claim-transaction.js';
import { claimStatement, claimWon, recordStatements } from '../../libs/idempotency/src/claiming/claim.queries.js';
import { MODULE_DEFAULTS, WEBHOOK_RESPONSE, webhookClaim, webhookEvent } from './webhook-message.js';
import { TABLE } from './sizing-database.js';

/** How many first deliveries to claim, how many at once, and at what pace. */
export interface ClaimLoad {
  concurrency: number;
  /** Stop after this many claims. */
  count?: number;
  /** Stop after this many seconds. */
  seconds?: number;
  /** Claims per second to start, spread evenly; unset: as fast as the database answers. */
  rate?: number;
}

/** What a load did; hold times are from the pooled connection's arrival to its return, in ms. */
export interface ClaimLoadResult {
  claims: number;
  seconds: number;
  claimsPerSecond: number;
  holdMs: { mean: number; p50: number; p99: number };
}

/**
 * Claims new webhook deliveries with the module's own code for the transactional mode: a pooled
 * connection through `ClaimTransaction`, `BEGIN` with the claim's statements in one round trip,
 * then the recorded response's UPDATE with `COMMIT` in another, as `ClaimingService` and
 * `OpenClaim` send them around a handler that does no work of its own.
 */
export async function runClaims(dataSource: DataSource, load: ClaimLoad): Promise<ClaimLoadResult> {
  const started = performance.now();
  const ends = load.seconds === undefined ? Infinity : started + load.seconds * 1000;
  const limit = load.count ?? Infinity;
  const holds: number[] = [];
  let issued = 0;
  const worker = async () => {
    while (issued < limit && performance.now() < ends) {
      const slot = issued++;
      if (load.rate !== undefined) {
        const due = started + (slot / load.rate) * 1000 - performance.now();
        if (due > 0) {
          await new Promise((resolve) => setTimeout(resolve, due));
        }
      }
      holds.push(await claimOnce(dataSource));
    }
  };
  await Promise.all(Array.from({ length: load.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  const sorted = [...holds].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    claims: holds.length,
    seconds,
    claimsPerSecond: holds.length / seconds,
    holdMs: { mean: holds.reduce((sum, each) => sum + each, 0) / holds.length, p50: at(0.5), p99: at(0.99) },
  };
}

/** One first delivery claimed, recorded and committed; returns how long it held its connection (ms). */
async function claimOnce(dataSource: DataSource): Promise<number> {
  const request = webhookClaim(webhookEvent());
  const transaction = await ClaimTransaction.connect(dataSource, MODULE_DEFAULTS.connectionTimeoutMs, request);
  const held = performance.now();
  try {
    const sql = { table: TABLE, literal: (value: string) => transaction.literal(value) };
    const [claim] = await transaction.begin(request.isolationLevel, [claimStatement(sql, request)]);
    if (!claimWon(claim)) {
      throw new Error(`the claim of new event ${request.key} found it taken`);
    }
    await transaction.commit(recordStatements(sql, request, WEBHOOK_RESPONSE));
  } finally {
    await transaction.close();
  }
  return performance.now() - held;
}
