import type pg from 'pg';
import type { DataSource } from 'typeorm';
import { WEBHOOK_RESPONSE, webhookClaim, webhookEvent } from './webhook-message.js';
import { TABLE } from './sizing.settings.js';

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
 * Claims new webhook deliveries as the module's transactional mode does (docs/design.md, "The
 * claim"): a pooled connection, `BEGIN` with the call of the table's claim function in one round
 * trip, then the call of its record function with `COMMIT` in another, around a handler that does
 * no work of its own. The functions are those of the shipped migrations.
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
  const runner = dataSource.createQueryRunner('master');
  const client = (await runner.connect()) as pg.PoolClient;
  const held = performance.now();
  try {
    const literal = (value: string) => client.escapeLiteral(value);
    const claimed = (await client.query(
      `BEGIN; SELECT "${TABLE}_claim"(${literal(request.consumer)}, ${literal(request.key)}, ${literal(request.sender)}, ` +
        `${literal(request.fingerprint)}, ${request.retentionMs}) AS claimed`,
    )) as unknown as pg.QueryResult<{ claimed: boolean }>[];
    if (!claimed[1].rows[0].claimed) {
      throw new Error(`the claim of new event ${request.key} found it taken`);
    }
    const { status, headers, body } = WEBHOOK_RESPONSE;
    await client.query(
      `SELECT "${TABLE}_record"(${literal(request.consumer)}, ${literal(request.key)}, ${status}, ` +
        `${literal(JSON.stringify(headers))}::json, '\\x${(body as Buffer).toString('hex')}'::bytea); COMMIT`,
    );
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    await runner.release();
  }
  return performance.now() - held;
}
