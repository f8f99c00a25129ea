import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { schemaSql } from 'nestjs-idempotent-consumer';
import { type DataLayerHarness, dataLayerContract } from 'nestjs-idempotent-consumer/testing';
import { LAYERS, type LayerName } from './apps/data-layers/layers.js';
import type { DemoProcess } from './support/demo-process.js';
import { layerServices } from './support/layer-service.js';
import { createTestDatabase, lockGate, type TestDatabase } from './support/test-database.js';

/** The service on one data layer, built by `npm run build:test-apps` (`npm test` does). */
const LAYER_APP = resolve('dist/test-apps/test/apps/data-layers/layer-app.main.js');

/**
 * Round trips a layer adds to the same write in a transaction of its own: none where the write is
 * one statement; MikroORM's flush opens a transaction of its own, a savepoint in the claim's
 * (SAVEPOINT and RELEASE).
 */
const ADDED_ROUND_TRIPS: Record<LayerName, number> = { pg: 0, drizzle: 0, 'drizzle-cls': 0, kysely: 0, prisma: 0, 'prisma-cls': 0, 'mikro-orm': 2, typeorm: 0 };

/** The layers on a pg Pool, whose handlers are watched for a write through another Pool. */
const POOL_LAYERS: readonly LayerName[] = ['pg', 'drizzle', 'drizzle-cls', 'kysely', 'prisma', 'prisma-cls'];

/**
 * The guarantees of the transactional claim, the same on every data layer: `dataLayerContract()`
 * on each shipped layer, whose service writes through its own instance (a pg Pool, Drizzle,
 * Kysely, Prisma, MikroORM, a TypeORM data source), the effects counted in PostgreSQL; then what
 * the shipped layers add (no round trip, the warning of another pool, the advice of the refused
 * COMMIT). The pool layers' store is made by the shipped SQL, as their users make it; TypeORM's by
 * the same SQL, which its migrations print.
 */
describe.each(LAYERS)('the %s data layer', (layer) => {
  let db: TestDatabase;
  let app: DemoProcess;
  const services = layerServices(LAYER_APP, '/round-trips', () => ({ DATABASE_URL: db.url, LAYER: layer }));
  const harness: DataLayerHarness = {
    service: () => services.asService(app),
    start: async (options) => services.asService(await services.start(options)),
    query: (sql, params) => db.query(sql, params),
    block: (gate) => lockGate(db, gate),
  };

  const credit = (account: string, key: string, body: Record<string, unknown> = {}) =>
    fetch(`${app.baseUrl}/credits/${account}`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: JSON.stringify({ cents: 7, ...body }) });
  const rows = async (account: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM layer_credits WHERE account = $1', [account]))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const { sql } of await schemaSql()) {
      await db.query(sql);
    }
    await db.query('CREATE TABLE layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)');
    await db.query('CREATE TABLE gates (name text PRIMARY KEY)');
    app = await services.start();
  });

  afterAll(async () => {
    await services.killAll();
    await db?.drop();
  });

  describe('dataLayerContract()', () => {
    for (const check of dataLayerContract(harness)) {
      it(check.name, check.run);
    }
  });

  it("refuses a handler's bare COMMIT with advice that names each layer's nested transaction, and logs it as Nest logs its 500s", async () => {
    const answer = await credit('commits-advice', 'commits-advice', { commitItself: true });
    expect(answer.status).toBe(500);
    // The title fits a refusal as well as an ended transaction.
    expect(await answer.json()).toMatchObject({
      type: 'urn:idempotency:claim-transaction',
      title: "The handler's transaction control conflicts with the claim",
      detail: expect.stringContaining('Prisma $transaction()'),
    });
    expect(app.output()).toContain("POST /credits/:account called COMMIT on the claim's transaction");
    expect(await rows('commits-advice')).toBe(0);
  });

  it('warns once per handler when it writes through another pool, whose writes cannot commit with the claim', async () => {
    const escape = (key: string) =>
      fetch(`${app.baseUrl}/escapes/escapes`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: '{"cents":1}' });
    expect((await escape('escape-1')).status).toBe(201);
    expect((await escape('escape-2')).status).toBe(201);
    expect(await rows('escapes')).toBe(2);
    const warnings = app.output().split('\n').filter((line) => line.includes('through another pg Pool'));
    if (!POOL_LAYERS.includes(layer)) {
      // TypeORM's other data sources are watched instead, and MikroORM's knex pool; a pg Pool of the service's own is not one.
      expect(warnings).toHaveLength(0);
    } else {
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('POST /escapes/:account sent a statement through another pg Pool');
    }
  });

  it(`adds ${ADDED_ROUND_TRIPS[layer]} round trips to the same write in a transaction of the layer: BEGIN travels with the claim, the record with COMMIT`, async () => {
    const measure = async (path: string, key: string) => {
      const before = ((await (await fetch(`${app.baseUrl}/round-trips`)).json()) as { roundTrips: number }).roundTrips;
      const answer = await fetch(`${app.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: '{"cents":1}' });
      expect(answer.status).toBe(201);
      return ((await (await fetch(`${app.baseUrl}/round-trips`)).json()) as { roundTrips: number }).roundTrips - before;
    };
    await measure('/plain/trips', 'warm-up');
    const plain = await measure('/plain/trips', 'plain');
    const idempotent = await measure('/credits/trips', 'trips');
    console.log(`${layer}: round trips of one credit, plain ${plain}, idempotent ${idempotent}`);
    expect(idempotent).toBe(plain + ADDED_ROUND_TRIPS[layer]);
  });
});

describe('a pool layer on a database without the store', () => {
  it('refuses to start, naming the SQL files to run and the command that prints them', async () => {
    const db = await createTestDatabase();
    try {
      const child = spawn(process.execPath, [LAYER_APP], { env: { ...process.env, DATABASE_URL: db.url, LAYER: 'drizzle', PORT: '0' } });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).not.toBe(0);
      expect(output).toContain('IdempotencySchemaError');
      expect(output).toContain("Run the package's SQL of 1764633600000-create-processed-messages-table.sql");
      expect(output).toContain('npx nestjs-idempotent-consumer-sql');
    } finally {
      await db.drop();
    }
  });
});
