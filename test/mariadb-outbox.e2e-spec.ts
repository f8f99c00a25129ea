import { Body, Controller, Inject, type INestApplication, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import {
  IdempotencyHealthIndicator,
  IdempotencyModule,
  IdempotencyOutboxError,
  IdempotencyPurgeService,
  IdempotentHandler,
  mariaDbOutboxSql,
  mariaDbSchemaSql,
  Mysql2PoolDataLayer,
  Outbox,
  OutboxAdmin,
  type OutboxPublisher,
  OutboxRelay,
  type OutgoingMessage,
} from 'nestjs-idempotent-consumer';
import { createMariaDbDatabase, type MariaDbDatabase } from './support/mariadb-database.js';
import { until } from './support/test-database.js';

/** A broker of this suite: it keeps what it was sent, in order, and refuses a message as often as the test says. */
class RecordingBroker implements OutboxPublisher {
  readonly received: OutgoingMessage[] = [];
  readonly attempts = new Map<string, number>();
  /** Failures still to answer, by message id; Infinity: always. */
  readonly failures = new Map<string, number>();

  async publish(message: OutgoingMessage): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.attempts.set(message.id, (this.attempts.get(message.id) ?? 0) + 1);
    const left = this.failures.get(message.id) ?? 0;
    if (left > 0) {
      this.failures.set(message.id, left - 1);
      throw new Error(`broker refused ${message.id}`);
    }
    this.received.push(message);
  }

  ids(): string[] {
    return this.received.map((message) => message.id);
  }
}

const POOL = Symbol('POOL');

/** Writes an order and announces it in the claim's transaction; `fail` throws after both. */
@Controller('orders')
class OrdersController {
  constructor(
    @Inject(POOL) private readonly pool: Pool,
    private readonly outbox: Outbox,
  ) {}

  @Post()
  @IdempotentHandler()
  async order(@Body() body: { id: string; orderingKey?: string; delay?: '2s'; fail?: boolean }) {
    await this.pool.query('INSERT INTO orders (id) VALUES (?)', [body.id]);
    await this.outbox.publish({ to: 'recording', address: 'orders', payload: { id: body.id }, id: body.id, orderingKey: body.orderingKey, headers: { 'x-order': body.id }, delay: body.delay });
    if (body.fail) {
      throw new Error('the handler failed after publishing');
    }
    return { id: body.id };
  }
}

/**
 * The transactional outbox on MariaDB through `Mysql2PoolDataLayer`, against a broker of the suite:
 * messages written with the handler's work or in the caller's transaction, sent once after the
 * COMMIT (the relay woken by its own process's commits: its poll is an hour), ordering keys whose
 * writers take turns, retries, dead letters and the admin, delays, the purge of dispatched
 * messages and the start-up check of the tables. The effects are counted in MariaDB. The
 * relay's kill, the broker's restart and two relays competing run end to end in outbox.mariadb.
 */
describe('the outbox on MariaDB (Mysql2PoolDataLayer)', () => {
  const broker = new RecordingBroker();
  let mariadb: MariaDbDatabase;
  let appPool: Pool;
  let app: INestApplication;
  let base: string;
  let counter = 0;
  const newId = (name: string) => `${name}-${++counter}`;

  const count = async (sql: string, params: unknown[] = []) => Number(((await mariadb.pool.query(sql, params))[0] as { n: number }[])[0].n);
  const row = async (id: string) =>
    ((await mariadb.pool.query('SELECT dispatched_at IS NOT NULL AS dispatched, dead_lettered_at IS NOT NULL AS dead, attempts FROM outbox_messages WHERE id = ?', [id]))[0] as {
      dispatched: number;
      dead: number;
      attempts: number;
    }[])[0];
  const order = async (body: Record<string, unknown>) => {
    const response = await fetch(`${base}/orders`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': String(body.id) }, body: JSON.stringify(body) });
    return response.status;
  };
  const received = (id: string) => broker.ids().includes(id);
  /** Transactions of this suite's database waiting for a row lock (other suites share the server). */
  const lockWaits = () =>
    count(
      "SELECT count(*) AS n FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.DB = DATABASE() AND t.trx_state = 'LOCK WAIT'",
    );

  function appModule(pool: Pool) {
    @Module({
      imports: [
        IdempotencyModule.forRoot({
          dataLayer: new Mysql2PoolDataLayer({ pool }),
          purge: { interval: false },
          outbox: { publishers: { recording: broker }, relay: { pollInterval: '1h', retryDelay: '50ms', maxRetryDelay: '100ms', maxAttempts: 3 } },
        }),
      ],
      controllers: [OrdersController],
      providers: [{ provide: POOL, useValue: pool }],
    })
    class MariaDbOutboxApp {}
    return MariaDbOutboxApp;
  }

  beforeAll(async () => {
    mariadb = await createMariaDbDatabase('idempotency_outbox', [mariaDbSchemaSql(), ...mariaDbOutboxSql().split(';\n').filter((statement) => statement.trim()), 'CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY)']);
    appPool = mysql.createPool({ uri: mariadb.url, connectionLimit: 10, multipleStatements: true });
    app = await NestFactory.create(appModule(appPool), { logger: false });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
    await appPool?.end();
    await mariadb?.drop();
  });

  it("sends a handler's message after its commit, once, with its id and headers, woken by the commit; a duplicate and a failed handler write none", async () => {
    const [sent, failed] = [newId('sent'), newId('failed')];
    expect(await order({ id: sent })).toBe(201);
    await until(async () => received(sent), `${sent} is sent without waiting for a poll`);
    expect(await order({ id: sent })).toBe(201);
    expect(await order({ id: failed, fail: true })).toBe(500);
    expect(await count('SELECT count(*) AS n FROM outbox_messages WHERE id IN (?, ?)', [sent, failed])).toBe(1);
    expect(await count('SELECT count(*) AS n FROM orders WHERE id IN (?, ?)', [sent, failed])).toBe(1);
    expect(await row(sent)).toEqual({ dispatched: 1, dead: 0, attempts: 0 });
    expect(broker.received.filter((message) => message.id === sent)).toEqual([
      { id: sent, address: 'orders', pattern: undefined, headers: { 'x-order': sent }, payload: JSON.stringify({ id: sent }), orderingKey: undefined },
    ]);
  });

  it("writes in the caller's transaction only at its commit, refuses the pool (no transaction) and an id the table has, naming them", async () => {
    const outbox = app.get(Outbox);
    const [mine, outside] = [newId('mine'), newId('outside')];
    const connection = await mariadb.pool.getConnection();
    try {
      await connection.query('START TRANSACTION');
      await outbox.publish({ to: 'recording', address: 'orders', payload: {}, id: mine }, { transaction: (sql) => connection.query(sql) });
      expect(await count('SELECT count(*) AS n FROM outbox_messages WHERE id = ?', [mine])).toBe(0);
      await connection.query('COMMIT');
    } finally {
      connection.release();
    }
    await app.get(OutboxRelay).runOnce();
    expect(received(mine)).toBe(true);
    await expect(outbox.publish({ to: 'recording', address: 'orders', payload: {}, id: outside }, { transaction: (sql) => mariadb.pool.query(sql) })).rejects.toThrow(IdempotencyOutboxError);
    expect(await count('SELECT count(*) AS n FROM outbox_messages WHERE id = ?', [outside])).toBe(0);
    const again = await mariadb.pool.getConnection();
    try {
      await again.query('START TRANSACTION');
      await expect(outbox.publish({ to: 'recording', address: 'orders', payload: {}, id: mine }, { transaction: (sql) => again.query(sql) })).rejects.toThrow(new RegExp(`${mine}`));
      await again.query('ROLLBACK');
    } finally {
      again.release();
    }
  });

  it('makes the writers of one ordering key take turns from INSERT to COMMIT: the second waits, and the relay sends in commit order', async () => {
    const outbox = app.get(Outbox);
    const key = newId('key');
    const [first, second, rolledBack] = [newId('first'), newId('second'), newId('rolled-back')];
    const writers: PoolConnection[] = [await mariadb.pool.getConnection(), await mariadb.pool.getConnection(), await mariadb.pool.getConnection()];
    try {
      const write = async (connection: PoolConnection, id: string) => {
        await connection.query('START TRANSACTION');
        await outbox.publish({ to: 'recording', address: 'orders', payload: {}, id, orderingKey: key }, { transaction: (sql) => connection.query(sql) });
      };
      await write(writers[0], rolledBack);
      const firstWrites = write(writers[1], first);
      await until(async () => (await lockWaits()) === 1, 'the second writer of the key waits');
      await writers[0].query('ROLLBACK');
      await firstWrites;
      const secondWrites = write(writers[2], second);
      await until(async () => (await lockWaits()) === 1, 'the third writer of the key waits');
      await writers[1].query('COMMIT');
      await secondWrites;
      await writers[2].query('COMMIT');
    } finally {
      writers.forEach((connection) => connection.release());
    }
    const relay = app.get(OutboxRelay);
    await until(async () => (await relay.runOnce()).taken === 0 && received(second), 'both messages of the key are sent');
    expect(broker.ids().filter((id) => [first, second, rolledBack].includes(id))).toEqual([first, second]);
  });

  it('20 concurrent requests writing one new ordering key: each answered 201 once retried, 20 messages sent in the order written, each once', async () => {
    const key = newId('busy-key');
    const ids = Array.from({ length: 20 }, (_, index) => `${key}-${index}`);
    const statuses = await Promise.all(
      ids.map(async (id) => {
        const seen: number[] = [];
        for (let attempt = 0; attempt < 20 && seen.at(-1) !== 201; attempt++) {
          seen.push(await order({ id, orderingKey: key }));
        }
        return seen;
      }),
    );
    expect(statuses.filter((seen) => seen.at(-1) !== 201 || seen.some((status) => ![201, 409, 503].includes(status)))).toEqual([]);
    await until(async () => ids.every(received), 'the 20 messages are sent');
    const written = ((await mariadb.pool.query('SELECT id FROM outbox_messages WHERE ordering_key = ? ORDER BY seq', [key]))[0] as { id: string }[]).map((message) => message.id);
    expect(broker.ids().filter((id) => ids.includes(id))).toEqual(written);
    expect(written.sort()).toEqual([...ids].sort());
    expect(await count('SELECT count(*) AS n FROM orders WHERE id LIKE ?', [`${key}-%`])).toBe(20);
  });

  it('parks a message that keeps failing as a dead letter holding its key, health goes down, and the admin requeues (waking the relay) or discards', async () => {
    const [dead, held, discarded] = [newId('dead'), newId('held'), newId('discarded')];
    const key = newId('dead-key');
    broker.failures.set(dead, Infinity);
    broker.failures.set(discarded, Infinity);
    for (const [id, orderingKey] of [[dead, key], [held, key], [discarded, undefined]]) {
      expect(await order({ id, orderingKey })).toBe(201);
    }
    await until(async () => (await row(dead))?.dead === 1 && (await row(discarded))?.dead === 1, 'both are dead letters');
    expect(broker.attempts.get(dead)).toBe(3);
    expect(received(held)).toBe(false);
    const health = await app.get(IdempotencyHealthIndicator).isHealthy();
    expect(health.idempotency.status).toBe('down');
    expect(health.idempotency.outbox).toEqual({ lagSeconds: expect.any(Number), deadLetters: 2 });

    const admin = app.get(OutboxAdmin);
    const letters = await admin.deadLetters({ actor: 'ops' });
    expect(letters.map((letter) => letter.id)).toEqual([dead, discarded]);
    expect(letters[0]).toMatchObject({ orderingKey: key, headers: { 'x-order': dead }, attempts: 3, lastError: `broker refused ${dead}` });
    expect((await admin.deadLetter({ id: dead }))?.createdAt).toBeInstanceOf(Date);
    broker.failures.delete(dead);
    expect(await admin.requeue({ ids: [dead, held], reason: 'broker fixed', actor: 'ops' })).toEqual([dead]);
    expect(await admin.discard({ ids: [discarded], reason: 'sent by hand', actor: 'ops' })).toEqual([discarded]);
    await until(async () => received(held), 'the requeued message and the one it held are sent');
    expect(broker.ids().filter((id) => [dead, held].includes(id))).toEqual([dead, held]);
    expect(await admin.deadLetters()).toEqual([]);
    expect((await app.get(IdempotencyHealthIndicator).isHealthy()).idempotency.status).toBe('up');
  });

  it('sends a delayed message no sooner than its delay', async () => {
    const delayed = newId('delayed');
    const written = Date.now();
    expect(await order({ id: delayed, delay: '2s' })).toBe(201);
    const relay = app.get(OutboxRelay);
    expect((await relay.runOnce()).taken).toBe(0);
    await until(async () => (await relay.runOnce()).published === 1, `${delayed} is sent once due`);
    expect(Date.now() - written).toBeGreaterThanOrEqual(2_000);
    expect(received(delayed)).toBe(true);
  });

  it('purges dispatched messages past outbox.retention, and keeps those not sent yet', async () => {
    const pending = newId('pending');
    broker.failures.set(pending, Infinity);
    expect(await order({ id: pending })).toBe(201);
    await until(async () => (await row(pending))?.attempts === 1, `${pending} failed once`);
    await mariadb.pool.query('UPDATE outbox_messages SET dispatched_at = NOW(6) - INTERVAL 30 DAY WHERE dispatched_at IS NOT NULL');
    expect(await count('SELECT count(*) AS n FROM outbox_messages WHERE dispatched_at IS NOT NULL')).toBeGreaterThan(20);
    await app.get(IdempotencyPurgeService).purgeNow();
    expect(await count('SELECT count(*) AS n FROM outbox_messages WHERE dispatched_at IS NOT NULL')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM outbox_messages WHERE id = ?', [pending])).toBe(1);
    broker.failures.delete(pending);
  });

  it("refuses to start with an outbox whose tables are missing, naming the package's MariaDB SQL file", async () => {
    const empty = await createMariaDbDatabase('idempotency_outbox_empty', [mariaDbSchemaSql()]);
    const refused = await NestFactory.create(appModule(empty.pool), { logger: false });
    try {
      await expect(refused.init()).rejects.toThrow(
        /outbox \(table outbox_messages and its ordering keys' table outbox_messages_keys\).*sql\/mariadb\/1796688000000-create-outbox-messages-table\.sql/,
      );
    } finally {
      await refused.close().catch(() => undefined);
      await empty.drop();
    }
  });
});
