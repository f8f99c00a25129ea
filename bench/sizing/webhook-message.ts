import { hash, randomUUID } from 'node:crypto';
import type { RecordedResponse } from 'nestjs-idempotent-consumer';
import type { StoreDatabase } from '../../test/support/store-database.js';
import { TABLE } from './sizing.settings.js';

/** The module's documented defaults (`@default` of `retention`, `purge.interval` and `purge.batchSize`). */
export const MODULE_DEFAULTS = { retentionMs: 7 * 24 * 3_600_000, purge: { intervalMs: 60_000, batchSize: 5000 } } as const;

/** What the module claims for one delivery: the arguments of the table's claim function. */
export interface WebhookClaim {
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  /** A SHA-256 in hex, as long as the module's fingerprint of a payload. */
  readonly fingerprint: string;
  readonly retentionMs: number;
}

/**
 * A typical webhook handler: `@IdempotentHandler({ key: { body: 'id' }, sender: 'payments',
 * fingerprint })` on `POST /webhooks/payments`, a 36-character event id as the key, a fingerprint
 * of the event (the measured rows carry one; since 0.3.0 a key taken from the body has none by
 * default, 65 bytes less per row), and a small JSON answer recorded for replay.
 */
export const WEBHOOK_HANDLER = { consumer: 'POST /webhooks/payments', sender: 'payments' } as const;

/**
 * What Nest on Express answers `{ received: true }` with, as the module records it: header names as
 * Express sends them (date and connection are never recorded).
 */
export const WEBHOOK_RESPONSE: RecordedResponse = {
  status: 200,
  headers: {
    'X-Powered-By': 'Express',
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': '17',
    ETag: 'W/"11-KlhGF0UKfrEVQVsQd2Q5V4Kx4Ek"',
  },
  body: Buffer.from('{"received":true}'),
};

/** A new event, as a payment provider sends it. */
export function webhookEvent(): { id: string; type: string; data: { account: string; cents: number } } {
  return { id: randomUUID(), type: 'payment.succeeded', data: { account: `acc-${Math.floor(Math.random() * 1e6)}`, cents: 1999 } };
}

/** The claim the module makes for a delivery of `event`. */
export function webhookClaim(event: ReturnType<typeof webhookEvent>): WebhookClaim {
  return {
    consumer: WEBHOOK_HANDLER.consumer,
    key: event.id,
    sender: WEBHOOK_HANDLER.sender,
    fingerprint: hash('sha256', JSON.stringify(event), 'hex'),
    retentionMs: MODULE_DEFAULTS.retentionMs,
  };
}

/** Where bulk rows are written and when they expire. */
export interface BulkRows {
  count: number;
  /** Row `i` (from 0) expires `firstExpiry + i × expirySpacingMs`, so expiries rise in insertion order. */
  firstExpiry: Date;
  expirySpacingMs: number;
  log(line: string): void;
}

const BULK_CHUNK = 1_000_000;

/**
 * Writes `count` rows as processed webhook deliveries leave them (the claim's columns and the
 * recorded response, a random 36-character UUID as each key) with `INSERT ... SELECT
 * generate_series`, a million at a time, into the table with its indexes in place. Each million
 * is inserted in key order, so that its keys reach the primary key's leaves one after the other
 * rather than at random (a random order takes this machine ten times longer once the index
 * outgrows shared_buffers); the keys of one million still fall between those of the others, so
 * the leaves split as under random keys. Expiries rise in insertion order, as a service's do; each
 * row was processed one retention before it expires.
 */
export async function insertBulkRows(database: StoreDatabase, { count, firstExpiry, expirySpacingMs, log }: BulkRows): Promise<void> {
  for (let from = 0; from < count; from += BULK_CHUNK) {
    const size = Math.min(BULK_CHUNK, count - from);
    await database.query(
      `INSERT INTO "${TABLE}" (consumer, message_id, sender, fingerprint, response_status, response_headers, response_body, processed_at, expires_at)
       SELECT $1, key, $2, encode(sha256(key::bytea), 'hex'), $3, $4::json, $5, expiry - $8 * interval '1 millisecond', expiry
       FROM (SELECT key, $6::bigint + row_number() OVER (ORDER BY key) - 1 AS i
             FROM (SELECT gen_random_uuid()::text AS key FROM generate_series(1, $7::bigint)) AS keys) AS ordered,
            LATERAL (SELECT $9::timestamptz + i * $10::float8 * interval '1 millisecond' AS expiry) AS e
       ORDER BY key`,
      [
        WEBHOOK_HANDLER.consumer,
        WEBHOOK_HANDLER.sender,
        WEBHOOK_RESPONSE.status,
        JSON.stringify(WEBHOOK_RESPONSE.headers),
        WEBHOOK_RESPONSE.body,
        from,
        size,
        MODULE_DEFAULTS.retentionMs,
        firstExpiry,
        expirySpacingMs,
      ],
    );
    log(`bulk rows ${(from + size).toLocaleString('en-US')} of ${count.toLocaleString('en-US')}`);
  }
}
