import { resolve } from 'node:path';
import { schemaSql } from 'nestjs-idempotent-consumer';
import { type DataLayerHarness, type DataLayerService, dataLayerContract } from 'nestjs-idempotent-consumer/testing';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { createTestDatabase, lockGate, type TestDatabase } from './support/test-database.js';

/** The contract's service on the knex layer, built by `npm run build:test-apps` (`npm test` does). */
const KNEX_APP = resolve('dist/test-apps/test/apps/knex-layer/knex-app.main.js');

/**
 * A data layer of the user's own (knex on its pg driver, test/apps/knex-layer), written with the
 * package's public API only, proven as the shipped layers are: by `dataLayerContract()`.
 */
describe('a knex data layer of the application', () => {
  let db: TestDatabase;
  let service: DataLayerService;
  const processes: DemoProcess[] = [];

  const start = async (poolMax?: number): Promise<DataLayerService> => {
    const env: Record<string, string> = { DATABASE_URL: db.url };
    if (poolMax !== undefined) env.POOL_MAX = String(poolMax);
    const started = await startAppProcess(KNEX_APP, env, '/announced');
    processes.push(started);
    return { baseUrl: started.baseUrl, output: started.output, kill: () => started.kill('SIGKILL') };
  };
  const harness: DataLayerHarness = {
    service: () => service,
    start: (options) => start(options?.poolMax),
    query: (sql, params) => db.query(sql, params),
    block: (gate) => lockGate(db, gate),
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const { sql } of await schemaSql()) {
      await db.query(sql);
    }
    service = await start();
  });

  afterAll(async () => {
    await Promise.all(processes.map((started) => started.kill('SIGKILL')));
    await db?.drop();
  });

  for (const check of dataLayerContract(harness)) {
    it(check.name, check.run);
  }
});
