import type { INestApplication } from '@nestjs/common';
import { IdempotencyHealthIndicator, IdempotencyPurgeService } from 'nestjs-idempotent-consumer';
import { post, startDemoApp } from './support/demo-app.js';
import { seedProcessedMessages } from './support/processed-messages.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

interface HealthAnswer {
  status: number;
  body: {
    status: string;
    details: Record<string, { status: string; [field: string]: unknown }>;
  };
}

async function health(baseUrl: string): Promise<HealthAnswer> {
  const response = await fetch(`${baseUrl}/health`);
  return { status: response.status, body: (await response.json()) as HealthAnswer['body'] };
}

describe('GET /health with the idempotency indicator', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [], false, {
      purge: { interval: false },
      health: { maxPurgeLag: '1h', maxDuplicateRate: 0.2, duplicateRateMinDeliveries: 10 },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('is up on a fresh store, whose size is unknown until the table is analysed', async () => {
    const answer = await health(baseUrl);
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('ok');
    expect(answer.body.details.database).toMatchObject({ status: 'up' });
    expect(answer.body.details.idempotency).toEqual({
      status: 'up',
      store: { estimatedRows: 'unknown', totalBytes: expect.any(Number) },
      purge: { lagSeconds: 0, secondsSinceLastSuccess: null, lastRun: null },
      duplicateRates: {},
    });
  });

  it('is down when the oldest expired id waits for the purge longer than maxPurgeLag, and up once purged', async () => {
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, fingerprint, expires_at)
       VALUES ('Lag.test', 'late', 'payments', repeat('0', 64), now() - interval '2 hours')`,
    );
    const down = await health(baseUrl);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe('error');
    expect(down.body.details.database.status).toBe('up');
    expect(down.body.details.idempotency).toMatchObject({
      status: 'down',
      purge: { lagSeconds: expect.any(Number) },
      problems: [expect.stringMatching(/^The oldest expired message id expired 72\d\ds ago .* health\.maxPurgeLag \(1h\)\.$/)],
    });
    expect((down.body.details.idempotency.purge as { lagSeconds: number }).lagSeconds).toBeGreaterThanOrEqual(7200);

    expect(await app.get(IdempotencyPurgeService).purgeNow()).toMatchObject({ outcome: 'purged', rows: 1 });
    const up = await health(baseUrl);
    expect(up.status).toBe(200);
    expect(up.body.details.idempotency).toMatchObject({ status: 'up', purge: { lagSeconds: 0, lastRun: { outcome: 'purged', rows: 1 } } });
  });

  it("is down when a sender's duplicate rate passes maxDuplicateRate, naming the sender", async () => {
    for (let i = 0; i < 8; i++) {
      const event = { id: `evt-rate-${i}`, type: 'noop' };
      expect((await post(`${baseUrl}/webhooks/payments`, event)).status).toBe(200);
      if (i < 2) {
        expect((await post(`${baseUrl}/webhooks/payments`, event)).headers.get('idempotent-replayed')).toBe('true');
      }
    }
    const atThreshold = await health(baseUrl);
    expect(atThreshold.status).toBe(200);
    expect(atThreshold.body.details.idempotency.duplicateRates).toEqual({ payments: { deliveries: 10, duplicates: 2, rate: 0.2 } });

    expect((await post(`${baseUrl}/webhooks/payments`, { id: 'evt-rate-0', type: 'noop' })).status).toBe(200);
    const down = await health(baseUrl);
    expect(down.status).toBe(503);
    expect(down.body.details.idempotency).toMatchObject({
      status: 'down',
      duplicateRates: { payments: { deliveries: 11, duplicates: 3 } },
      problems: [
        "3 of 11 deliveries from 'payments' in the last 5m were duplicates (27.3%), more than health.maxDuplicateRate (20%).",
      ],
    });
  });
});

describe('the idempotency indicator on a store of 1,000,000 rows', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [], false, { purge: { interval: false } }));
    await seedProcessedMessages(db, { count: 1_000_000, consumer: 'Large.store', expired: false });
    await db.query('ANALYZE processed_messages');
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('reports the size from the catalog statistics, without counting the rows', async () => {
    const indicator = app.get(IdempotencyHealthIndicator);
    await indicator.isHealthy();
    const timings: number[] = [];
    let result: Awaited<ReturnType<IdempotencyHealthIndicator['isHealthy']>> | undefined;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      result = await indicator.isHealthy();
      timings.push(performance.now() - started);
    }
    const { estimatedRows } = (result?.idempotency as unknown as { store: { estimatedRows: number } }).store;
    expect(result?.idempotency.status).toBe('up');
    expect(estimatedRows).toBeGreaterThan(950_000);
    expect(estimatedRows).toBeLessThan(1_050_000);

    const started = performance.now();
    const answer = await health(baseUrl);
    const httpMs = performance.now() - started;
    expect(answer.status).toBe(200);
    console.log(
      `health e2e: indicator on 1,000,000 rows: estimatedRows=${estimatedRows}, ` +
        `isHealthy() ${timings.map((ms) => ms.toFixed(1)).join(' / ')} ms, GET /health ${httpMs.toFixed(1)} ms`,
    );
  });
});
