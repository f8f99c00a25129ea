import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { schemaSql } from 'nestjs-idempotent-consumer';
import { LAYERS, type LayerName } from './apps/data-layers/layers.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

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
 * The guarantees of the transactional claim, the same on every data layer: each layer's service
 * writes through its own instance (a pg Pool, Drizzle, Kysely, a TypeORM data source) and the
 * effects are counted in PostgreSQL. The pool layers' store is made by the shipped SQL, as their
 * users make it; TypeORM's by the same SQL, which its migrations print.
 */
describe.each(LAYERS)('the claim on the %s data layer', (layer) => {
  let db: TestDatabase;
  let app: DemoProcess;
  const processes: DemoProcess[] = [];

  async function start(): Promise<DemoProcess> {
    const started = await startAppProcess(LAYER_APP, { DATABASE_URL: db.url, LAYER: layer }, '/round-trips');
    processes.push(started);
    return started;
  }

  const credit = async (base: string, account: string, key: string, body: Record<string, unknown> = {}) => {
    const response = await fetch(`${base}/credits/${account}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ cents: 7, ...body }),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const credits = async (account: string) =>
    (await db.query<{ n: string; cents: string | null }>('SELECT count(*) AS n, sum(cents) AS cents FROM layer_credits WHERE account = $1', [account]))[0];
  const rows = async (account: string) => Number((await credits(account)).n);
  const claims = async (key: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [key]))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const { sql } of await schemaSql()) {
      await db.query(sql);
    }
    await db.query('CREATE TABLE layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)');
    await db.query('CREATE TABLE gates (name text PRIMARY KEY)');
    app = await start();
  });

  afterAll(async () => {
    await Promise.all(processes.map((started) => started.kill('SIGKILL')));
    await db?.drop();
  });

  it('a process SIGKILLed mid-handler, after its write: nothing committed, and the redelivery applies the credit exactly once', async () => {
    const gate = `gate-${layer}`;
    await db.query('INSERT INTO gates (name) VALUES ($1)', [gate]);
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT name FROM gates WHERE name = $1 FOR UPDATE', [gate]);
    const doomed = await start();
    const inFlight = expect(credit(doomed.baseUrl, 'crash', 'crash', { gate })).rejects.toThrow('fetch failed');
    await until(
      async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length === 1,
      'the handler wrote its credit and waits at the gate',
    );
    await doomed.kill('SIGKILL');
    await inFlight;
    await holder.query('ROLLBACK');
    await holder.end();
    expect(await rows('crash')).toBe(0);
    expect(await claims('crash')).toBe(0);

    let redelivered = await credit(app.baseUrl, 'crash', 'crash', { gate });
    await until(async () => {
      if (redelivered.status !== 409) return true;
      redelivered = await credit(app.baseUrl, 'crash', 'crash', { gate });
      return false;
    }, "the dead process's transaction is gone");
    expect(redelivered.status).toBe(201);
    expect((await credit(app.baseUrl, 'crash', 'crash', { gate })).headers.get('idempotent-replayed')).toBe('true');
    expect(await rows('crash')).toBe(1);
  });

  it('50 concurrent duplicates: one credit, every other answered as a replay or 409', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => credit(app.baseUrl, 'fifty', 'fifty')));
    expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(await rows('fifty')).toBe(1);
    expect(await claims('fifty')).toBe(1);
  });

  it('a handler that throws after its write: nothing committed, claim included, and the key stays usable', async () => {
    expect((await credit(app.baseUrl, 'throws', 'throws', { fail: true })).status).toBe(500);
    expect(await rows('throws')).toBe(0);
    expect(await claims('throws')).toBe(0);
    expect((await credit(app.baseUrl, 'throws', 'throws')).status).toBe(201);
    expect(await rows('throws')).toBe(1);
  });

  it('replays the recorded response byte for byte, without running the handler again', async () => {
    const first = await credit(app.baseUrl, 'replay', 'replay');
    const again = await credit(app.baseUrl, 'replay', 'replay');
    expect(first.status).toBe(201);
    expect(again).toMatchObject({ status: 201, text: first.text });
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.text).toContain('é ✓');
    expect(await rows('replay')).toBe(1);
  });

  it("the layer's own transaction inside the handler is a savepoint: committed, it commits with the claim; rolled back, only its write is undone", async () => {
    expect((await credit(app.baseUrl, 'nested-commit', 'nested-commit', { nested: 'commit' })).status).toBe(201);
    expect(await credits('nested-commit')).toEqual({ n: '2', cents: '707' });
    expect((await credit(app.baseUrl, 'nested-rollback', 'nested-rollback', { nested: 'rollback' })).status).toBe(201);
    expect(await credits('nested-rollback')).toEqual({ n: '1', cents: '7' });
    expect(await claims('nested-rollback')).toBe(1);
  });

  it.each([
    ['commit', 'rollback'],
    ['rollback', 'commit'],
  ])("two of the layer's transactions at once in one handler, the first to start ending with %s: each is undone alone", async (first, second) => {
    const account = `parallel-${first}`;
    const answer = await credit(app.baseUrl, account, account, { parallel: [first, second] });
    expect(answer.status).toBe(201);
    // The handler's credit (7), and of 70 (the first) and 700 (the second), the one that committed.
    expect(await credits(account)).toEqual({ n: '2', cents: first === 'commit' ? '77' : '707' });
    expect(await claims(account)).toBe(1);
    expect((await credit(app.baseUrl, account, account, { parallel: [first, second] })).headers.get('idempotent-replayed')).toBe('true');
    expect(await rows(account)).toBe(2);
  });

  it("statements the handler sends at once take turns on the claim's connection, without node-postgres's warning of a query sent while another runs", async () => {
    expect((await credit(app.baseUrl, 'at-once', 'at-once', { concurrent: 3 })).status).toBe(201);
    expect(await rows('at-once')).toBe(4);
    expect(app.output()).not.toContain('already executing a query');
  });

  it('two handlers that resume in one tick each read their own uncommitted write, and not the other\'s', async () => {
    const meet = (key: string) =>
      fetch(`${app.baseUrl}/meets/meets`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: JSON.stringify({ meeting: 'tick' }) }).then(
        async (answer) => ({ status: answer.status, body: (await answer.json()) as unknown }),
      );
    const answers = await Promise.all([meet('meets-1'), meet('meets-2')]);
    expect(answers).toEqual([
      { status: 201, body: { own: true, other: false } },
      { status: 201, body: { own: true, other: false } },
    ]);
    expect(await rows('meets')).toBe(2);
  });

  it('a nested transaction that rolls back before the handler throws leaves nothing behind', async () => {
    expect((await credit(app.baseUrl, 'nested-fail', 'nested-fail', { nested: 'rollback', fail: true })).status).toBe(500);
    expect(await rows('nested-fail')).toBe(0);
    expect(await claims('nested-fail')).toBe(0);
  });

  it("a handler that sends a bare COMMIT of the claim's transaction is refused before it commits: answered 500, nothing committed", async () => {
    const first = await credit(app.baseUrl, 'commits', 'commits', { commitItself: true });
    expect(first.status).toBe(500);
    // The advice names each layer's nested transaction, not TypeORM's alone; the title fits a refusal as well as an ended transaction.
    expect(JSON.parse(first.text)).toMatchObject({
      type: 'urn:idempotency:claim-transaction',
      title: "The handler's transaction control conflicts with the claim",
      detail: expect.stringContaining('Prisma $transaction()'),
    });
    // Logged, as Nest logs the 500s it answers itself.
    expect(app.output()).toContain("POST /credits/:account called COMMIT on the claim's transaction");
    expect(await rows('commits')).toBe(0);
    expect(await claims('commits')).toBe(0);
  });

  it('run() outside a handler: 20 concurrent calls of one key run the work once, the others answer its recorded result; failed work leaves nothing', async () => {
    const run = async (key: string, body: Record<string, unknown> = {}) =>
      (await (await fetch(`${app.baseUrl}/runs/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cents: 7, key, ...body }) })).json()) as Record<
        string,
        unknown
      >;
    expect(await run('run-fails', { fail: true })).toEqual({ error: 'Error' });
    expect(await rows('runs')).toBe(0);
    expect(await claims('run-fails')).toBe(0);
    const answers = await Promise.all(Array.from({ length: 20 }, () => run('run-1')));
    // The first answers the result itself, the others its JSON: the Date as its ISO text.
    expect(answers.filter((answer) => JSON.stringify(answer) === JSON.stringify({ result: { account: 'runs', cents: 7, at: new Date(0) } }))).toHaveLength(20);
    expect(await rows('runs')).toBe(1);
    expect(await claims('run-1')).toBe(1);
  });

  it("run() in the service's own transaction: the claim commits with it, or rolls back with it; 10 concurrent runs of one key, one credit", async () => {
    const run = async (key: string, body: Record<string, unknown> = {}) =>
      (await (await fetch(`${app.baseUrl}/runs-own/own`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cents: 7, key, ...body }) })).json()) as Record<
        string,
        unknown
      >;
    expect(await run('own-rolled-back', { fail: true })).toEqual({ error: 'the service fails after run()' });
    expect(await rows('own')).toBe(0);
    expect(await claims('own-rolled-back')).toBe(0);
    const answers = await Promise.all(Array.from({ length: 10 }, () => run('own-1')));
    expect(answers).toEqual(Array(10).fill({ result: { account: 'own', cents: 7 } }));
    expect(await rows('own')).toBe(1);
    expect(await claims('own-1')).toBe(1);
    // The rolled-back key was never claimed: it runs now.
    expect(await run('own-rolled-back')).toEqual({ result: { account: 'own', cents: 7 } });
    expect(await rows('own')).toBe(2);
  });

  it('run() inside an idempotent handler joins its claim: 6 concurrent requests on a pool of 2 all succeed, each work once; a handler that throws after run() rolls its work back', async () => {
    const small = await startAppProcess(LAYER_APP, { DATABASE_URL: db.url, LAYER: layer, POOL_MAX: '2' }, '/round-trips');
    processes.push(small);
    const handled = (key: string, body: Record<string, unknown> = {}) =>
      fetch(`${small.baseUrl}/handler-runs/handled`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': `request-${key}` },
        body: JSON.stringify({ cents: 7, key, ...body }),
      });
    try {
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => handled(`handled-${i}`)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(201));
      expect(await rows('handled')).toBe(6);
      expect(Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'layer-handler-run'`))[0].n)).toBe(6);

      expect((await handled('handled-failed', { fail: true })).status).toBe(500);
      expect(await rows('handled')).toBe(6);
      expect(await claims('handled-failed')).toBe(0);
      expect(await claims('request-handled-failed')).toBe(0);
      // Nothing of the work was kept: the next delivery runs it.
      expect((await handled('handled-failed')).status).toBe(201);
      expect(await rows('handled')).toBe(7);
    } finally {
      // Its outbox relay would take the messages that the next tests wait for at the other service.
      await small.kill('SIGKILL');
    }
  });

  it('a message the handler publishes through the outbox leaves with its commit, once; a handler that throws after publishing leaves none', async () => {
    const announced = async () => (await (await fetch(`${app.baseUrl}/announced`)).json()) as string[];
    const outboxRows = async (id: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM outbox_messages WHERE id = $1', [id]))[0].n);
    expect((await credit(app.baseUrl, 'announce-failed', 'announce-failed', { announce: 'granted-failed', fail: true })).status).toBe(500);
    const answers = await Promise.all(Array.from({ length: 10 }, () => credit(app.baseUrl, 'announce', 'announce', { announce: 'granted-1' })));
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    await until(async () => (await announced()).includes('granted-1'), 'the relay sent granted-1');
    expect(await outboxRows('granted-1')).toBe(1);
    expect(await outboxRows('granted-failed')).toBe(0);
    expect(await rows('announce')).toBe(1);
    expect(await rows('announce-failed')).toBe(0);
    expect((await announced()).filter((id) => id === 'granted-1' || id === 'granted-failed')).toEqual(['granted-1']);
  });

  it("Outbox.publish({ transaction }) in the service's own transaction: sent when it commits, never when it rolls back", async () => {
    const announced = async () => (await (await fetch(`${app.baseUrl}/announced`)).json()) as string[];
    const run = async (key: string, body: Record<string, unknown>) =>
      (await (await fetch(`${app.baseUrl}/runs-own/own-announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cents: 7, key, ...body }) })).json()) as Record<string, unknown>;
    expect(await run('own-announce-rolled-back', { announce: 'own-granted-rolled-back', fail: true })).toEqual({ error: 'the service fails after run()' });
    expect(await run('own-announce', { announce: 'own-granted' })).toEqual({ result: { account: 'own-announce', cents: 7 } });
    await until(async () => (await announced()).includes('own-granted'), 'the relay sent own-granted');
    expect(await db.query('SELECT id FROM outbox_messages WHERE id LIKE $1', ['own-granted%'])).toEqual([{ id: 'own-granted' }]);
    expect(await announced()).not.toContain('own-granted-rolled-back');
  });

  it('lease mode claims on the store of the layer: 10 concurrent duplicates, one credit', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(`${app.baseUrl}/leased/leased`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': 'leased' }, body: '{"cents":7}' }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 201)).not.toHaveLength(0);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(await rows('leased')).toBe(1);
  });

  it('purges expired ids and reports health through the layer', async () => {
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, expires_at) SELECT 'old', 'old-' || i, 'test', now() - interval '1 hour' FROM generate_series(1, 25) i`,
    );
    const purged = (await (await fetch(`${app.baseUrl}/purge`, { method: 'POST' })).json()) as { outcome: string; rows: number };
    expect(purged).toMatchObject({ outcome: 'purged', rows: 25 });
    expect(Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'old'`))[0].n)).toBe(0);
    const health = (await (await fetch(`${app.baseUrl}/health`)).json()) as { idempotency: Record<string, unknown> };
    // The status may be down by the duplicate rate of the tests above; the store's figures come through the layer.
    expect(health.idempotency).toMatchObject({ store: { totalBytes: expect.any(Number) }, purge: { lastRun: { outcome: 'purged', rows: 25 } } });
  });

  it('warns once per handler when it writes through another pool, whose writes cannot commit with the claim', async () => {
    const escape = (key: string) =>
      fetch(`${app.baseUrl}/escapes/escapes`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: '{"cents":1}' });
    expect((await escape('escape-1')).status).toBe(201);
    expect((await escape('escape-2')).status).toBe(201);
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
