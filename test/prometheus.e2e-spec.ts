import { resolve } from 'node:path';
import { post } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** A service that serves /metrics with @willsoto/nestjs-prometheus (CommonJS, so a process of its own), built by `npm test`. */
const METERED_APP = resolve('dist/test-apps/test/apps/metered/metered-app.main.js');

describe("the module's counters on the /metrics a service already serves with prom-client", () => {
  let db: TestDatabase;
  let app: DemoProcess;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startAppProcess(METERED_APP, { DATABASE_URL: db.url }, '/metrics');
  });

  afterAll(async () => {
    await app?.kill();
    await db?.drop();
  });

  it('shows them beside its own metrics, with exact counts', async () => {
    for (const key of ['o-1', 'o-2', 'o-3', 'o-1', 'o-2']) {
      expect((await post(`${app.baseUrl}/orders`, {}, { 'Idempotency-Key': key })).status).toBe(201);
    }
    expect((await post(`${app.baseUrl}/orders`, {})).status).toBe(400);
    const text = await (await fetch(`${app.baseUrl}/metrics`)).text();
    const sample = (series: string) => Number(new RegExp(`^${series.replace(/[{}()[\]]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    const deliveries = (outcome: string) => sample(`idempotency_deliveries_total{consumer="POST /orders",sender="default",outcome="${outcome}"}`);
    expect(sample('orders_received_total')).toBe(3);
    expect([deliveries('processed'), deliveries('duplicate'), deliveries('rejected'), deliveries('unavailable'), deliveries('failed')]).toEqual([3, 2, 1, 0, 0]);
    expect(text).toContain('# TYPE idempotency_deliveries_total counter');
    expect(text).toContain('# TYPE idempotency_purge_runs_total counter');
  });
});
