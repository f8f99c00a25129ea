import type { INestApplication } from '@nestjs/common';
import { IdempotencyMetricsService } from 'nestjs-idempotent-consumer';
import { FixtureController, FixtureModule } from './fixtures/fixture.module.js';
import { PLATFORMS, post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/** The delivery and purge samples of a Prometheus text exposition, by series (`name{labels}`); test/alerts.e2e-spec.ts checks the others. */
function parseSamples(text: string): Map<string, number> {
  return new Map(
    text
      .split('\n')
      .filter((line) => /^idempotency_(deliveries_total|purge)/.test(line))
      .map((line) => {
        const separator = line.lastIndexOf(' ');
        return [line.slice(0, separator), Number(line.slice(separator + 1))];
      }),
  );
}

const series = (consumer: string, sender: string, outcome: string) =>
  `idempotency_deliveries_total{consumer="${consumer}",sender="${sender}",outcome="${outcome}"}`;

describe.each(PLATFORMS)('delivery metrics end to end on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp(platform, db.url, [FixtureModule], false, { purge: { interval: false } }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('counts processed, duplicate, rejected and failed deliveries exactly, per consumer and sender', async () => {
    const credit = (key: string | undefined, cents = 100) =>
      post(`${baseUrl}/credits`, { account: `acc-metrics-${platform}`, cents }, key ? { 'Idempotency-Key': key } : {});
    for (const key of ['m-1', 'm-2', 'm-3']) {
      expect((await credit(key)).status).toBe(201);
    }
    expect((await credit('m-1')).headers.get('idempotent-replayed')).toBe('true');
    expect((await credit('m-2')).headers.get('idempotent-replayed')).toBe('true');
    expect((await credit('m-3', 999)).status).toBe(422);
    expect((await credit(undefined)).status).toBe(400);
    // The handler refuses the body (400): the sender's mistake, rejected, never failed.
    expect((await credit('m-invalid', -1)).status).toBe(400);

    // A twin that arrives while the first delivery is still in its transaction: 409, rejected.
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM accounts WHERE account = $1 FOR UPDATE', [`acc-metrics-${platform}`]);
    const first = credit('m-4');
    await until(
      async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length === 1,
      'the first delivery waits on the account lock',
    );
    expect((await credit('m-4')).status).toBe(409);
    await holder.query('ROLLBACK');
    await holder.end();
    expect((await first).status).toBe(201);

    app.get(FixtureController).flakyAttempts = 0;
    const flaky = () => post(`${baseUrl}/fixture/flaky`, { account: `acc-flaky-${platform}`, cents: 5 }, { 'Idempotency-Key': 'flaky-1' });
    expect((await flaky()).status).toBe(500);
    expect((await flaky()).status).toBe(201);

    for (const id of ['evt-1', 'evt-2', 'evt-1']) {
      expect((await post(`${baseUrl}/webhooks/payments`, { id, type: 'noop' })).status).toBe(200);
    }

    const response = await fetch(`${baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const samples = parseSamples(await response.text());
    const expected = {
      [series('POST /credits', 'default', 'processed')]: 4,
      [series('POST /credits', 'default', 'duplicate')]: 2,
      [series('POST /credits', 'default', 'rejected')]: 4,
      [series('POST /credits', 'default', 'unavailable')]: 0,
      [series('POST /credits', 'default', 'failed')]: 0,
      [series('POST /fixture/flaky', 'default', 'processed')]: 1,
      [series('POST /fixture/flaky', 'default', 'duplicate')]: 0,
      [series('POST /fixture/flaky', 'default', 'rejected')]: 0,
      [series('POST /fixture/flaky', 'default', 'unavailable')]: 0,
      [series('POST /fixture/flaky', 'default', 'failed')]: 1,
      [series('POST /webhooks/payments', 'payments', 'processed')]: 2,
      [series('POST /webhooks/payments', 'payments', 'duplicate')]: 1,
      [series('POST /webhooks/payments', 'payments', 'rejected')]: 0,
      [series('POST /webhooks/payments', 'payments', 'unavailable')]: 0,
      [series('POST /webhooks/payments', 'payments', 'failed')]: 0,
      'idempotency_purge_runs_total{outcome="purged"}': 0,
      'idempotency_purge_runs_total{outcome="skipped"}': 0,
      'idempotency_purge_runs_total{outcome="failed"}': 0,
      idempotency_purged_rows_total: 0,
      // 0 until this instance's first purge run.
      idempotency_purge_last_duration_seconds: 0,
      idempotency_purge_last_success_timestamp_seconds: 0,
    };
    expect(Object.fromEntries(samples)).toEqual(expected);
    expect(app.get(IdempotencyMetricsService).deliveries()).toEqual([
      { consumer: 'POST /credits', sender: 'default', processed: 4, duplicate: 2, rejected: 4, unavailable: 0, failed: 0 },
      { consumer: 'POST /fixture/flaky', sender: 'default', processed: 1, duplicate: 0, rejected: 0, unavailable: 0, failed: 1 },
      { consumer: 'POST /webhooks/payments', sender: 'payments', processed: 2, duplicate: 1, rejected: 0, unavailable: 0, failed: 0 },
    ]);
  });
});
