import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { IdempotencyHealthIndicator, IdempotencyPurgeService, mariaDbSchemaSql } from 'nestjs-idempotent-consumer';
import { mariaDbAppModule } from './apps/mariadb/mariadb-app.module.js';
import { startAppProcess } from './support/demo-process.js';
import { createMariaDbDatabase, type MariaDbDatabase } from './support/mariadb-database.js';
import { gateWaits, holdGates } from './support/mariadb-gates.js';
import { until } from './support/test-database.js';
import { resolve } from 'node:path';

/** The app as a process of its own, built by `npm run build:test-apps` (`npm test` does). */
const MARIADB_APP = resolve('dist/test-apps/test/apps/mariadb/mariadb-app.main.js');


/**
 * The store on MariaDB through `Mysql2PoolDataLayer`: the claim and the handler's writes through
 * the app's own mysql2 pool commit together or not at all, duplicates race on the primary key, a
 * deadlock or a lock wait timeout inside a handler is answered as a retry with nothing kept, and
 * the purge and the health figures read MariaDB's catalogue. The effects are counted in MariaDB.
 */
describe('the store on MariaDB (Mysql2PoolDataLayer)', () => {
  let mariadb: MariaDbDatabase;
  let db: Pool;
  let appPool: Pool;
  let app: INestApplication;
  let base: string;

  const count = async (sql: string, params: unknown[] = []) => Number(((await db.query<RowDataPacket[]>(sql, params))[0][0] as { n: number | string }).n);
  const credits = (account: string) => count('SELECT count(*) AS n FROM credits WHERE account = ?', [account]);
  const claims = (key: string) => count('SELECT count(*) AS n FROM processed_messages WHERE message_id = ?', [key]);
  const credit = async (base: string, account: string, key: string, body: Record<string, unknown> = {}) => {
    const response = await fetch(`${base}/credits/${account}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ cents: 7, ...body }),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  async function startApp(pool: Pool): Promise<INestApplication> {
    const started = await NestFactory.create(mariaDbAppModule(pool), { logger: false });
    await started.listen(0, '127.0.0.1');
    return started;
  }

  beforeAll(async () => {
    mariadb = await createMariaDbDatabase('idempotency_e2e', [
      mariaDbSchemaSql(),
      'CREATE TABLE credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(64) NOT NULL, cents INT NOT NULL)',
      'CREATE TABLE gates (name VARCHAR(64) PRIMARY KEY)',
    ]);
    db = mariadb.pool;
    appPool = mysql.createPool({ uri: mariadb.url, connectionLimit: 10, multipleStatements: true });
    app = await startApp(appPool);
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
    await appPool?.end();
    await mariadb?.drop();
  });

  const hold = (...gates: string[]) => holdGates(mariadb, ...gates);
  const lockWaits = () => gateWaits(mariadb);

  it('50 concurrent duplicates, on a pool with and without multipleStatements: one credit and one claim each, every other answered as a replay or 409', async () => {
    const single = mysql.createPool({ uri: mariadb.url, connectionLimit: 10 });
    const other = await startApp(single);
    try {
      for (const [at, account] of [[base, 'fifty'], [await other.getUrl(), 'fifty-single']] as const) {
        const answers = await Promise.all(Array.from({ length: 50 }, () => credit(at, account, account)));
        expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
        expect(answers.filter((answer) => answer.status !== 201 && answer.status !== 409)).toEqual([]);
        expect(await credits(account)).toBe(1);
        expect(await claims(account)).toBe(1);
      }
    } finally {
      await other.close();
      await single.end();
    }
  });

  it('replays the recorded response byte for byte, without running the handler again', async () => {
    const first = await credit(base, 'replay', 'replay');
    const again = await credit(base, 'replay', 'replay');
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.parse(first.text)).toMatchObject({ note: 'é ✓' });
    expect(await credits('replay')).toBe(1);
  });

  it('keys compare byte for byte: Order-1 and order-1 are two messages, and a trailing space makes another key', async () => {
    for (const key of ['Order-1', 'order-1']) {
      const answer = await credit(base, 'keys', key);
      expect([key, answer.status, answer.headers.get('idempotent-replayed')]).toEqual([key, 201, null]);
    }
    expect(await credits('keys')).toBe(2);
    // HTTP trims a header's trailing space: the column's own comparison, written directly.
    await db.query(`INSERT INTO processed_messages (consumer, message_id, sender, expires_at) SELECT consumer, 'order-1 ', sender, expires_at FROM processed_messages WHERE message_id = 'order-1'`);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id IN ('order-1', 'order-1 ')`)).toBe(2);
  });

  it('a handler that throws after its write: nothing committed, claim included, and the key stays usable', async () => {
    expect((await credit(base, 'throws', 'throws', { fail: true })).status).toBe(500);
    expect(await credits('throws')).toBe(0);
    expect(await claims('throws')).toBe(0);
    expect((await credit(base, 'throws', 'throws')).status).toBe(201);
    expect(await credits('throws')).toBe(1);
  });

  it('a prepared statement (execute()) joins the claim: thrown after it, nothing is kept; then it credits once', async () => {
    expect((await credit(base, 'prepared', 'prepared', { prepared: true, fail: true })).status).toBe(500);
    expect(await credits('prepared')).toBe(0);
    expect((await credit(base, 'prepared', 'prepared', { prepared: true })).status).toBe(201);
    expect(await credits('prepared')).toBe(1);
  });

  it.each(['drizzle', 'kysely'] as const)("%s on the app's pool joins the claim: its transaction is a savepoint, committed with the claim or rolled back alone", async (layer) => {
    const account = `${layer}-layer`;
    expect((await credit(base, account, `${account}-commit`, { layer: { name: layer, ending: 'commit' } })).status).toBe(201);
    expect((await credit(base, account, `${account}-rollback`, { layer: { name: layer, ending: 'rollback' } })).status).toBe(201);
    // The handler's credit of 7 twice, and the 70 of the transaction that committed.
    expect(await count('SELECT sum(cents) AS n FROM credits WHERE account = ?', [account])).toBe(84);
    expect((await credit(base, `${account}-failed`, `${account}-failed`, { layer: { name: layer, ending: 'commit' }, fail: true })).status).toBe(500);
    expect(await credits(`${account}-failed`)).toBe(0);
  });

  it("a bare COMMIT of the claim's transaction sent by the handler is refused before it commits: answered 500, nothing committed", async () => {
    const answer = await credit(base, 'commits', 'commits', { commitItself: true });
    expect(answer.status).toBe(500);
    expect((JSON.parse(answer.text) as { type?: unknown }).type).toBe('urn:idempotency:claim-transaction');
    expect(await credits('commits')).toBe(0);
    expect(await claims('commits')).toBe(0);
  });

  it("the pool's own transaction inside the handler is a savepoint: committed, it commits with the claim; rolled back, only its write is undone", async () => {
    expect((await credit(base, 'nested-commit', 'nested-commit', { nested: 'commit' })).status).toBe(201);
    expect(await count('SELECT sum(cents) AS n FROM credits WHERE account = ?', ['nested-commit'])).toBe(707);
    expect((await credit(base, 'nested-rollback', 'nested-rollback', { nested: 'rollback' })).status).toBe(201);
    expect(await count('SELECT sum(cents) AS n FROM credits WHERE account = ?', ['nested-rollback'])).toBe(7);
    expect(await claims('nested-rollback')).toBe(1);
  });

  it('a duplicate of a message in flight waits for it, and is answered its response once it commits', async () => {
    const release = await hold('in-flight');
    try {
      const first = credit(base, 'in-flight', 'in-flight', { gates: ['in-flight'] });
      await until(async () => (await lockWaits()) === 1, 'the first delivery waits at its gate');
      const second = credit(base, 'in-flight', 'in-flight', { gates: ['in-flight'] });
      await release();
      const answers = await Promise.all([first, second]);
      expect(answers.map((answer) => answer.status).sort()).toEqual(expect.arrayContaining([201]));
      expect(answers.filter((answer) => answer.status !== 201 && answer.status !== 409)).toEqual([]);
    } finally {
      await release();
    }
    expect(await credits('in-flight')).toBe(1);
    expect(await claims('in-flight')).toBe(1);
  });

  it('a process SIGKILLed mid-handler, its claim written and its handler waiting at a gate: nothing committed, and the redelivery credits once', async () => {
    const doomed = await startAppProcess(MARIADB_APP, { MARIADB_URL: mariadb.url }, '/ready');
    const release = await hold('crash');
    try {
      const inFlight = credit(doomed.baseUrl, 'crash', 'crash', { gates: ['crash'] }).then(
        () => 'answered',
        () => 'cut',
      );
      await until(async () => (await lockWaits()) === 1, 'the handler waits at its gate');
      await doomed.kill('SIGKILL');
      expect(await inFlight).toBe('cut');
    } finally {
      await release();
      await doomed.kill('SIGKILL');
    }
    // The server rolls the dead connection's transaction back once it notices the connection closed.
    await until(async () => (await claims('crash')) === 0 && (await credits('crash')) === 0, "the dead process's transaction is rolled back");
    let redelivered = await credit(base, 'crash', 'crash', { gates: ['crash'] });
    await until(async () => {
      if (redelivered.status !== 409) return true;
      redelivered = await credit(base, 'crash', 'crash', { gates: ['crash'] });
      return false;
    }, "the dead process's claim is gone");
    expect(redelivered.status).toBe(201);
    expect(await credits('crash')).toBe(1);
    expect(await claims('crash')).toBe(1);
  });

  it('a lock wait timeout (1205) inside the handler: answered 503 with Retry-After, nothing kept; the retry credits once', async () => {
    const release = await hold('timeout');
    try {
      const answer = await credit(base, 'timeout', 'timeout', { gates: ['timeout'], lockWaitSeconds: 1 });
      expect([answer.status, answer.headers.get('retry-after') !== null]).toEqual([503, true]);
    } finally {
      await release();
    }
    expect(await credits('timeout')).toBe(0);
    expect(await claims('timeout')).toBe(0);
    expect((await credit(base, 'timeout', 'timeout', { gates: ['timeout'] })).status).toBe(201);
    expect(await credits('timeout')).toBe(1);
  });

  it.each([
    ['the deadlock propagates: the victim is answered 503 (a retry)', false, 503],
    ['the handler catches the deadlock and writes on: its write is refused, the victim is answered 500 (its transaction was aborted)', true, 500],
  ])('two handlers deadlocked (1213), %s, with nothing of it kept; each retried key credits once', async (_, swallow, victimStatus) => {
    const suffix = swallow ? 'swallowed' : 'thrown';
    const [a, b] = [`deadlock-a-${suffix}`, `deadlock-b-${suffix}`];
    const [g1, g2, barrierA, barrierB] = ['1', '2', 'barrier-a', 'barrier-b'].map((gate) => `${gate}-${suffix}`);
    await db.query('INSERT INTO gates (name) VALUES (?), (?)', [g1, g2]);
    const release = await hold(barrierA, barrierB);
    let answers: Awaited<ReturnType<typeof credit>>[];
    try {
      // Each takes its first gate, waits at its barrier, then asks for the other's gate.
      const first = credit(base, a, a, { gates: [g1, barrierA, g2], swallow });
      const second = credit(base, b, b, { gates: [g2, barrierB, g1], swallow });
      await until(async () => (await lockWaits()) === 2, 'both handlers hold their first gate and wait at their barrier');
      await release();
      answers = await Promise.all([first, second]);
    } finally {
      await release();
    }
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, victimStatus]);
    const victim = answers[0].status === victimStatus ? a : b;
    expect(await credits(victim)).toBe(0);
    expect(await claims(victim)).toBe(0);
    expect((await credit(base, victim, victim)).status).toBe(201);
    expect(await credits(a)).toBe(1);
    expect(await credits(b)).toBe(1);
  });

  it('purges expired ids beside live claims, and reports the store from its catalogue', async () => {
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, expires_at)
       SELECT 'old', CONCAT('old-', seq), 'test', NOW(6) - INTERVAL 1 HOUR FROM seq_1_to_25`,
    );
    const live = await hold('purge');
    const inFlight = credit(base, 'purge', 'purge-live', { gates: ['purge'] });
    try {
      await until(async () => (await lockWaits()) === 1, 'a claim is in flight');
      const purged = await app.get(IdempotencyPurgeService).purgeNow();
      expect({ outcome: purged.outcome, rows: purged.rows }).toEqual({ outcome: 'purged', rows: 25 });
    } finally {
      await live();
    }
    expect((await inFlight).status).toBe(201);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'old'`)).toBe(0);
    expect(await claims('purge-live')).toBe(1);
    const health = await app.get(IdempotencyHealthIndicator).isHealthy('idempotency');
    const store = (health.idempotency as { store?: { estimatedRows?: unknown; totalBytes?: unknown } }).store;
    expect([typeof store?.estimatedRows, typeof store?.totalBytes]).toEqual(['number', 'number']);
  });

  it('two instances purging at once delete apart: 100,000 expired ids, each deleted once by one of them, neither run failing, claims answered meanwhile', async () => {
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, expires_at)
       SELECT 'twice', CONCAT('twice-', seq), 'test', NOW(6) - INTERVAL 1 HOUR FROM seq_1_to_100000`,
    );
    const secondPool = mysql.createPool({ uri: mariadb.url, connectionLimit: 10, multipleStatements: true });
    const second = await startApp(secondPool);
    try {
      const claimsMeanwhile = Promise.all(Array.from({ length: 20 }, (_, i) => credit(base, 'purging', `purging-${i}`)));
      const runs = await Promise.all([app, second].map((instance) => instance.get(IdempotencyPurgeService).purgeNow()));
      expect(runs.map((run) => run.outcome)).toEqual(['purged', 'purged']);
      expect(runs[0].rows + runs[1].rows).toBe(100_000);
      expect((await claimsMeanwhile).map((answer) => answer.status)).toEqual(Array.from({ length: 20 }, () => 201));
    } finally {
      await second.close();
      await secondPool.end();
    }
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'twice'`)).toBe(0);
    expect(await credits('purging')).toBe(20);
  });

  it('lease mode on the store: 10 concurrent duplicates, one credit, the others answered as replays or 409', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => credit(base, 'leased/leased', 'leased')));
    expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status !== 201 && answer.status !== 409)).toEqual([]);
    expect(await credits('leased')).toBe(1);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'leased' AND lease_token IS NULL`)).toBe(1);
  });

  it('refuses to start without the table, naming the MariaDB SQL file', async () => {
    const empty = await createMariaDbDatabase('idempotency_e2e_empty');
    try {
      await expect(startApp(empty.pool)).rejects.toThrow(/table processed_messages does not exist.*sql\/mariadb\/1796601600000-create-processed-messages-table\.sql/);
    } finally {
      await empty.drop();
    }
  });
});
