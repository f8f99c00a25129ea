import { Body, Controller, HttpException, type INestApplication, Module, Post } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  IDEMPOTENCY_CHANNELS,
  IdempotencyAdmin,
  IdempotencyAdminModule,
  OutboxAdmin,
  IdempotencyContext,
  IdempotencyHealthIndicator,
  IdempotencyOutboxError,
  IdempotencyPurgeService,
  IdempotentHandler,
  Outbox,
  type OutboxPublisher,
  OutboxRelay,
  type OutgoingMessage,
  type PublishAttempt,
  IdempotencyPublishRefusedError,
  schemaSql,
} from 'nestjs-idempotent-consumer';
import { Test } from '@nestjs/testing';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { resolve } from 'node:path';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { post, startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/**
 * A broker of this suite: it keeps what it was sent, in order, and refuses each message as often
 * as the test tells it to. The relay, the table and the transactions are the real ones; the
 * publishers of real brokers have their own suite (outbox-publishers), and the two-service proof
 * runs the whole path on RabbitMQ and JetStream (outbox).
 */
class ScriptedBroker implements OutboxPublisher {
  readonly received: OutgoingMessage[] = [];
  readonly attempts = new Map<string, number>();
  /** Failures still to answer, by message id; Infinity: always. */
  readonly failures = new Map<string, number>();
  /** What to reject the next publish of a message with instead of an Error, by message id: once. */
  readonly rejections = new Map<string, unknown>();
  /** Ids whose next publish is never confirmed: once. */
  readonly unconfirmed = new Set<string>();
  /** What the relay told each publish, by message id. */
  readonly told = new Map<string, PublishAttempt[]>();
  /** When each message was received (Date.now()), by message id. */
  readonly receivedAt = new Map<string, number>();
  /** Publishes under way, and the most there ever were at once. */
  inFlight = 0;
  mostInFlight = 0;

  async publish(message: OutgoingMessage, attempt: PublishAttempt): Promise<void> {
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    try {
      // A broker answers on a later turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
      await this.receive(message, attempt);
    } finally {
      this.inFlight--;
    }
  }

  private async receive(message: OutgoingMessage, attempt: PublishAttempt): Promise<void> {
    this.attempts.set(message.id, (this.attempts.get(message.id) ?? 0) + 1);
    this.told.set(message.id, [...(this.told.get(message.id) ?? []), attempt]);
    if (this.unconfirmed.delete(message.id)) {
      return new Promise(() => undefined);
    }
    if (this.rejections.has(message.id)) {
      const rejection = this.rejections.get(message.id);
      this.rejections.delete(message.id);
      throw rejection;
    }
    const left = this.failures.get(message.id) ?? 0;
    if (left > 0) {
      this.failures.set(message.id, left - 1);
      throw new Error(`broker refused ${message.id}`);
    }
    this.received.push(message);
    this.receivedAt.set(message.id, Date.now());
  }

  idsReceived(): string[] {
    return this.received.map((message) => message.id);
  }
}

const broker = new ScriptedBroker();

@Controller('outbox-ops')
class OutboxOpsController {
  constructor(
    private readonly outbox: Outbox,
    private readonly idempotency: IdempotencyContext,
  ) {}

  /** Credits, then announces the credit; `fail` throws after announcing, `refuse` answers 402 (a recorded error). */
  @Post('credit')
  @IdempotentHandler({ recordErrors: [402] })
  async credit(@Body() body: { id: string; account: string; fail?: boolean; refuse?: boolean; orderingKey?: string }) {
    await this.idempotency.manager.query('INSERT INTO outbox_ops_credits (id, account) VALUES ($1, $2)', [body.id, body.account]);
    await this.outbox.publish({ to: 'scripted', address: 'credits', pattern: 'credit.granted', payload: { id: body.id, account: body.account }, id: body.id, orderingKey: body.orderingKey });
    if (body.fail) {
      throw new Error('the handler failed after publishing');
    }
    if (body.refuse) {
      throw new HttpException('payment required', 402);
    }
    return { id: body.id };
  }

  /** Announces one message per id of `ids`, with those ids, and nothing else. */
  @Post('announce')
  @IdempotentHandler()
  async announce(@Body() body: { ids: string[] }) {
    for (const id of body.ids) {
      await this.outbox.publish({ to: 'scripted', address: 'announcements', payload: { id }, id });
    }
    return { announced: body.ids.length };
  }

  @Post('lease')
  @IdempotentHandler({ mode: 'lease' })
  async lease(@Body() body: { id: string }) {
    await this.outbox.publish({ to: 'scripted', address: 'credits', payload: body });
  }
}

@Module({ controllers: [OutboxOpsController] })
class OutboxOpsModule {}

/** A database of its own with the outbox table; the demo app's migrations add the store's at start. */
async function createOutboxDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  const outboxMigration = (await schemaSql()).find((migration) => migration.name.endsWith('create-outbox-messages-table'))!;
  await db.query(outboxMigration.sql);
  return db;
}

describe('the outbox: writes with the work, relay order, retries, dead letters, health, metrics, purge and admin', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let counter = 0;
  const newId = (name: string) => `${name}-${++counter}`;
  const credit = (body: Record<string, unknown>) => post(`${baseUrl}/outbox-ops/credit`, body, { 'Idempotency-Key': String(body.id) });
  const rows = (id: string) =>
    db.query<{ dispatched: boolean; dead: boolean; attempts: number; last_error: string | null }>(
      'SELECT dispatched_at IS NOT NULL AS dispatched, dead_lettered_at IS NOT NULL AS dead, attempts, last_error FROM outbox_messages WHERE id = $1',
      [id],
    );
  const received = (id: string) => broker.idsReceived().includes(id);

  beforeAll(async () => {
    db = await createOutboxDatabase();
    await db.query('CREATE TABLE outbox_ops_credits (id text PRIMARY KEY, account text NOT NULL)');
    ({ app, baseUrl } = await startDemoApp('express', db.url, [OutboxOpsModule], false, {
      purge: { interval: false },
      outbox: {
        publishers: { scripted: broker },
        relay: { pollInterval: '200ms', retryDelay: '50ms', maxRetryDelay: '100ms', maxAttempts: 3 },
      },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('sends a message written by an idempotent handler after its commit, once, with its id, and a duplicate writes none', async () => {
    const id = newId('granted');
    expect((await credit({ id, account: 'acc-1' })).status).toBe(201);
    await until(async () => received(id), `${id} was sent`);
    expect((await credit({ id, account: 'acc-1' })).headers.get('idempotent-replayed')).toBe('true');
    const sent = broker.received.find((message) => message.id === id)!;
    expect(sent).toMatchObject({ address: 'credits', pattern: 'credit.granted', payload: JSON.stringify({ id, account: 'acc-1' }) });
    await until(async () => (await rows(id))[0]?.dispatched === true, `${id} is marked dispatched`);
    expect(await db.query('SELECT count(*)::int AS n FROM outbox_messages WHERE id = $1', [id])).toEqual([{ n: 1 }]);
    expect(broker.idsReceived().filter((received) => received === id)).toHaveLength(1);
  });

  it('writes nothing for a handler that failed after publishing, nor for an error answer recorded with its claim', async () => {
    const failed = newId('failed');
    const refused = newId('refused');
    const after = newId('after');
    expect((await credit({ id: failed, account: 'acc-2', fail: true })).status).toBe(500);
    expect((await credit({ id: refused, account: 'acc-2', refuse: true })).status).toBe(402);
    expect((await credit({ id: refused, account: 'acc-2', refuse: true })).headers.get('idempotent-replayed')).toBe('true');
    expect((await credit({ id: after, account: 'acc-2' })).status).toBe(201);
    // The relay sends in the order of the writes: once `after` is sent, anything written before it was too.
    await until(async () => received(after), `${after} was sent`);
    expect(await db.query('SELECT id FROM outbox_messages WHERE id = ANY ($1)', [[failed, refused]])).toEqual([]);
    expect(await db.query('SELECT id FROM outbox_ops_credits WHERE id = ANY ($1)', [[failed, refused]])).toEqual([]);
    expect(broker.idsReceived()).not.toEqual(expect.arrayContaining([failed]));
    expect(broker.idsReceived()).not.toEqual(expect.arrayContaining([refused]));
  });

  it('refuses a message with no transaction to write it in, naming the fix, and writes one in the caller\'s transaction only at its commit', async () => {
    const outbox = app.get(Outbox);
    await expect(outbox.publish({ to: 'scripted', address: 'credits', payload: {} })).rejects.toThrow(IdempotencyOutboxError);
    await expect(outbox.publish({ to: 'scripted', address: 'credits', payload: {} })).rejects.toThrow(/outside an idempotent handler and without `transaction`/);
    const lease = await post(`${baseUrl}/outbox-ops/lease`, { id: newId('lease') }, { 'Idempotency-Key': newId('lease-key') });
    expect(lease.status).toBe(500);
    await expect(outbox.publish({ to: 'nowhere', address: 'x', payload: {} }, { transaction: async () => undefined })).rejects.toThrow(
      "no publisher \"nowhere\"; outbox.publishers has scripted",
    );
    await expect(outbox.publish({ to: 'scripted', address: 'x', payload: 10n }, { transaction: async () => undefined })).rejects.toThrow(IdempotencyOutboxError);

    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    const committed = await outbox.publish({ to: 'scripted', address: 'credits', payload: { by: 'caller' } }, { transaction: (sql) => runner.query(sql) });
    expect(await db.query('SELECT id FROM outbox_messages WHERE id = $1', [committed])).toEqual([]);
    await runner.commitTransaction();
    await until(async () => received(committed), 'the message of the committed transaction was sent');

    await runner.startTransaction();
    const rolledBack = await outbox.publish({ to: 'scripted', address: 'credits', payload: { by: 'caller' } }, { transaction: (sql) => runner.query(sql) });
    await runner.rollbackTransaction();
    await runner.release();
    const marker = newId('marker');
    expect((await credit({ id: marker, account: 'acc-3' })).status).toBe(201);
    await until(async () => received(marker), `${marker} was sent`);
    expect(received(rolledBack)).toBe(false);
    expect(await db.query('SELECT id FROM outbox_messages WHERE id = $1', [rolledBack])).toEqual([]);
  });

  it('refuses a `transaction` that is not an open transaction (the pool, a client before BEGIN, after COMMIT): nothing written, nothing sent', async () => {
    const outbox = app.get(Outbox);
    const [pooled, beforeBegin, afterCommit] = [newId('pooled'), newId('before-begin'), newId('after-commit')];
    const message = (id: string) => ({ to: 'scripted', address: 'credits', payload: { id }, id });
    const client = await db.connect();
    try {
      await expect(outbox.publish(message(pooled), { transaction: (sql) => app.get(DataSource).query(sql) })).rejects.toThrow(/outside a transaction block/);
      await expect(outbox.publish(message(beforeBegin), { transaction: (sql) => client.query(sql) })).rejects.toThrow(IdempotencyOutboxError);
      await client.query('BEGIN');
      await client.query('COMMIT');
      await expect(outbox.publish(message(afterCommit), { transaction: (sql) => client.query(sql) })).rejects.toThrow(IdempotencyOutboxError);
    } finally {
      await client.end();
    }
    const marker = newId('marker');
    expect((await credit({ id: marker, account: 'acc-3' })).status).toBe(201);
    await until(async () => received(marker), `${marker} was sent`);
    expect(await db.query('SELECT id FROM outbox_messages WHERE id = ANY ($1)', [[pooled, beforeBegin, afterCommit]])).toEqual([]);
    expect(broker.idsReceived().filter((id) => [pooled, beforeBegin, afterCommit].includes(id))).toEqual([]);
  });

  it('refuses a message whose id the table has, written in a transaction of the caller, as IdempotencyOutboxError naming the id', async () => {
    const id = newId('taken-by-caller');
    const runner = app.get(DataSource).createQueryRunner();
    try {
      for (const attempt of ['first', 'again']) {
        await runner.startTransaction();
        const publishing = app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: { attempt }, id }, { transaction: (sql) => runner.query(sql) });
        if (attempt === 'first') {
          await publishing;
          await runner.commitTransaction();
        } else {
          await expect(publishing).rejects.toThrow(IdempotencyOutboxError);
          await expect(publishing).rejects.toThrow(`the id '${id}' was written already`);
          await runner.rollbackTransaction();
        }
      }
    } finally {
      await runner.release();
    }
    expect(await db.query('SELECT payload FROM outbox_messages WHERE id = $1', [id])).toEqual([{ payload: JSON.stringify({ attempt: 'first' }) }]);
  });

  it('retries a failed publish, and keeps the order of an ordering key through the retries', async () => {
    const [first, second, third] = [newId('ordered'), newId('ordered'), newId('ordered')];
    broker.failures.set(first, 2);
    for (const id of [first, second, third]) {
      expect((await credit({ id, account: 'acc-4', orderingKey: 'acc-4' })).status).toBe(201);
    }
    await until(async () => received(third), `${third} was sent`);
    expect(broker.idsReceived().filter((id) => [first, second, third].includes(id))).toEqual([first, second, third]);
    expect(broker.attempts.get(first)).toBe(3);
    expect(broker.attempts.get(second)).toBe(1);
    expect(await rows(first)).toEqual([{ dispatched: true, dead: false, attempts: 2, last_error: `broker refused ${first}` }]);
  });

  it('refuses a second message of one id in a handler at once: a definite 500, nothing written, and so again on a retry', async () => {
    const id = newId('twice');
    const key = newId('twice-key');
    for (const attempt of [1, 2]) {
      const answer = await post(`${baseUrl}/outbox-ops/announce`, { ids: [id, id] }, { 'Idempotency-Key': key });
      expect({ attempt, status: answer.status, retryAfter: answer.headers.get('retry-after') }).toEqual({ attempt, status: 500, retryAfter: null });
    }
    expect(await rows(id)).toEqual([]);
  });

  it('fails the commit of a message whose id another transaction committed as a definite 500 problem, with nothing committed', async () => {
    const id = newId('taken');
    expect((await post(`${baseUrl}/outbox-ops/announce`, { ids: [id] }, { 'Idempotency-Key': newId('taken-first') })).status).toBe(201);
    const key = newId('taken-again');
    for (const attempt of [1, 2]) {
      const answer = await post(`${baseUrl}/outbox-ops/announce`, { ids: [id] }, { 'Idempotency-Key': key });
      expect({ attempt, status: answer.status, retryAfter: answer.headers.get('retry-after'), type: answer.headers.get('content-type') }).toEqual({
        attempt,
        status: 500,
        retryAfter: null,
        type: expect.stringContaining('application/problem+json'),
      });
      expect(answer.body).toMatchObject({ type: 'urn:idempotency:commit-refused', detail: expect.stringContaining(id) });
    }
    expect(await db.query('SELECT count(*)::int AS n FROM outbox_messages WHERE id = $1', [id])).toEqual([{ n: 1 }]);
  });

  it('counts a publish rejected with something that is not an Error as that message\'s failure only: the rest of its batch is sent once', async () => {
    const [bare, text, fine] = [newId('bare'), newId('text'), newId('fine')];
    broker.rejections.set(bare, Object.create(null));
    broker.rejections.set(text, 'the broker said no');
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    for (const id of [bare, text, fine]) {
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: { id }, id }, { transaction: (sql) => runner.query(sql) });
    }
    await runner.commitTransaction();
    await runner.release();
    await until(async () => received(bare) && received(text) && received(fine), 'all three were sent');
    await until(async () => (await rows(bare))[0]?.dispatched && (await rows(text))[0]?.dispatched, 'the two retried were marked dispatched');
    expect(broker.attempts.get(fine)).toBe(1);
    expect(broker.idsReceived().filter((id) => id === fine)).toHaveLength(1);
    expect(await rows(bare)).toEqual([{ dispatched: true, dead: false, attempts: 1, last_error: '[Object: null prototype] {}' }]);
    expect(await rows(text)).toEqual([{ dispatched: true, dead: false, attempts: 1, last_error: 'the broker said no' }]);
  });

  it('parks a message that keeps failing as a dead letter, which holds its key back, turns health down, and the admin requeues or discards', async () => {
    const [dead, held] = [newId('dead'), newId('held')];
    const [discarded, freed] = [newId('discarded'), newId('freed')];
    broker.failures.set(dead, Infinity);
    broker.failures.set(discarded, Infinity);
    for (const [id, key] of [[dead, 'acc-5'], [held, 'acc-5'], [discarded, 'acc-6'], [freed, 'acc-6']]) {
      expect((await credit({ id, account: key, orderingKey: key })).status).toBe(201);
    }
    await until(async () => (await rows(dead))[0]?.dead === true && (await rows(discarded))[0]?.dead === true, 'both are dead letters');
    expect(broker.attempts.get(dead)).toBe(3);
    expect(received(held) || received(freed)).toBe(false);

    const health = await app.get(IdempotencyHealthIndicator).isHealthy();
    expect(health.idempotency.status).toBe('down');
    expect(health.idempotency.outbox).toEqual({ lagSeconds: expect.any(Number), deadLetters: 2 });
    expect(health.idempotency.problems).toContainEqual(expect.stringContaining('2 outbox messages are parked as dead letters'));
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/idempotency_outbox_failed_total\{destination="scripted"\} ([6-9]|\d\d)/);
    expect(metrics).toMatch(/idempotency_outbox_dead_lettered_total 2\b/);
    expect(metrics).toMatch(/idempotency_outbox_published_total\{destination="scripted"\} \d+/);

    const admin = app.get(OutboxAdmin);
    const letters = await admin.deadLetters({ actor: 'ops' });
    expect(letters.map((letter) => letter.id)).toEqual([dead, discarded]);
    expect(letters[0]).toMatchObject({ destination: 'scripted', address: 'credits', orderingKey: 'acc-5', attempts: 3, lastError: `broker refused ${dead}` });
    await expect(admin.requeue({ ids: [dead], reason: '' })).rejects.toThrow('needs a `reason`');

    broker.failures.delete(dead);
    expect(await admin.requeue({ ids: [dead, held], reason: 'broker fixed', actor: 'ops' })).toEqual([dead]);
    expect(await admin.discard({ ids: [discarded], reason: 'sent by hand', actor: 'ops' })).toEqual([discarded]);
    await until(async () => received(held) && received(freed), 'the held messages were sent');
    expect(broker.idsReceived().filter((id) => [dead, held].includes(id))).toEqual([dead, held]);
    expect(received(discarded)).toBe(false);
    expect(await admin.deadLetters()).toEqual([]);
    expect((await app.get(IdempotencyHealthIndicator).isHealthy()).idempotency.status).toBe('up');
  });

  it("tells the outbox channel's subscribers of each message published, failed and dead-lettered, after the COMMIT that marked it", async () => {
    const [sent, retried, dead] = [newId('told-sent'), newId('told-retried'), newId('told-dead')];
    const events: Record<string, unknown>[] = [];
    const listener = (event: unknown) => {
      const told = event as Record<string, unknown>;
      if ([sent, retried, dead].includes(told.id as string)) {
        events.push(told);
      }
    };
    subscribe(IDEMPOTENCY_CHANNELS.outbox, listener);
    try {
      broker.failures.set(retried, 1);
      broker.failures.set(dead, Infinity);
      for (const id of [sent, retried, dead]) {
        expect((await credit({ id, account: 'acc-told' })).status).toBe(201);
      }
      await until(async () => events.length === 6, 'six events were told');
    } finally {
      unsubscribe(IDEMPOTENCY_CHANNELS.outbox, listener);
    }
    const of = (id: string) => events.filter((event) => event.id === id).map(({ event, attempt, error }) => ({ event, attempt, error }));
    expect(of(sent)).toEqual([{ event: 'published', attempt: 1, error: undefined }]);
    expect(of(retried)).toEqual([{ event: 'failed', attempt: 1, error: `broker refused ${retried}` }, { event: 'published', attempt: 2, error: undefined }]);
    expect(of(dead)).toEqual([
      { event: 'failed', attempt: 1, error: `broker refused ${dead}` },
      { event: 'failed', attempt: 2, error: `broker refused ${dead}` },
      { event: 'dead-lettered', attempt: 3, error: `broker refused ${dead}` },
    ]);
    expect(events.find((event) => event.id === sent)).toEqual({ event: 'published', id: sent, destination: 'scripted', address: 'credits', attempt: 1 });
    expect(await app.get(OutboxAdmin).discard({ ids: [dead], reason: 'test done' })).toEqual([dead]);
  });

  it('lists dead letters by ordering key, destination, address and age, a page after another, and gets one by id', async () => {
    const [first, second, third] = [newId('dl-first'), newId('dl-second'), newId('dl-third')];
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    for (const [id, address, orderingKey] of [[first, 'credits', 'dl-a'], [second, 'credits', 'dl-b'], [third, 'other', undefined]]) {
      broker.failures.set(id!, Infinity);
      await app.get(Outbox).publish({ to: 'scripted', address: address!, payload: { id }, id: id!, orderingKey }, { transaction: (sql) => runner.query(sql) });
    }
    await runner.commitTransaction();
    await runner.release();
    await until(async () => (await Promise.all([first, second, third].map(rows))).every(([row]) => row?.dead), 'all three are dead letters');
    const admin = app.get(OutboxAdmin);
    const ids = async (options: Parameters<OutboxAdmin['deadLetters']>[0]) => (await admin.deadLetters(options)).map((letter) => letter.id);
    expect(await ids({ orderingKey: 'dl-a' })).toEqual([first]);
    expect(await ids({ address: 'other' })).toEqual([third]);
    expect(await ids({ destination: 'scripted', limit: 2 })).toEqual([first, second]);
    expect(await ids({ destination: 'scripted', limit: 2, after: second })).toEqual([third]);
    expect(await ids({ destination: 'elsewhere' })).toEqual([]);
    expect(await ids({ deadLetteredBefore: new Date(Date.now() - 60_000) })).toEqual([]);
    expect(await ids({ deadLetteredBefore: new Date(Date.now() + 60_000), limit: 3 })).toEqual([first, second, third]);
    expect(await admin.deadLetter({ id: second })).toMatchObject({ id: second, orderingKey: 'dl-b', attempts: 3, lastError: `broker refused ${second}` });
    expect(await admin.deadLetter({ id: 'no-such-message' })).toBeNull();
    await expect(admin.deadLetters({ deadLetteredBefore: 'yesterday' as never })).rejects.toThrow("the outbox's `deadLetteredBefore` must be a valid Date");
    // A script's IdempotencyAdminModule given no `outbox` reads the default outbox table, as the service does.
    @Module({ imports: [TypeOrmModule.forRoot({ type: 'postgres', url: db.url, extra: { max: 2 } }), IdempotencyAdminModule.forRoot()] })
    class AdminScriptModule {}
    const script = await NestFactory.createApplicationContext(AdminScriptModule, { logger: false });
    try {
      expect((await script.get(OutboxAdmin).deadLetters({ destination: 'scripted' })).map((letter) => letter.id)).toEqual([first, second, third]);
    } finally {
      await script.close();
    }
    expect(await admin.discard({ ids: [first, second, third], reason: 'test done' })).toEqual([first, second, third]);
  });

  it('purges dispatched messages past outbox.retention, and keeps those not sent yet', async () => {
    const pending = newId('pending');
    broker.failures.set(pending, 1);
    expect((await credit({ id: pending, account: 'acc-7' })).status).toBe(201);
    await until(async () => (await rows(pending))[0]?.attempts === 1, `${pending} failed once`);
    await db.query("UPDATE outbox_messages SET dispatched_at = now() - interval '2 days' WHERE dispatched_at IS NOT NULL");
    const dispatched = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_messages WHERE dispatched_at IS NOT NULL'))[0].n;
    expect(dispatched).toBeGreaterThan(5);
    await app.get(IdempotencyPurgeService).purgeNow();
    expect(await db.query('SELECT count(*)::int AS n FROM outbox_messages WHERE dispatched_at IS NOT NULL AND id <> $1', [pending])).toEqual([{ n: 0 }]);
    await until(async () => received(pending), `${pending} was sent after its retry`);
  });
});

describe('the outbox: delayed messages, fields publish() does not know, publishes at once (concurrency: 2)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const timed = new ScriptedBroker();
  const inTransaction = async (write: (transaction: (sql: string) => Promise<unknown>) => Promise<unknown>) => {
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    try {
      await write((sql) => runner.query(sql));
      await runner.commitTransaction();
    } finally {
      if (runner.isTransactionActive) {
        await runner.rollbackTransaction();
      }
      await runner.release();
    }
  };

  beforeAll(async () => {
    db = await createOutboxDatabase();
    ({ app } = await startDemoApp('express', db.url, [], false, { purge: { interval: false }, outbox: { publishers: { scripted: timed }, relay: { pollInterval: '100ms', concurrency: 2 } } }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('publishes a batch of 10 two at a time', async () => {
    const ids = Array.from({ length: 10 }, (_, index) => `two-at-a-time-${index}`);
    timed.mostInFlight = 0;
    await inTransaction(async (transaction) => {
      for (const id of ids) {
        await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: {}, id }, { transaction });
      }
    });
    await until(async () => ids.every((id) => timed.idsReceived().includes(id)), 'all 10 were sent');
    expect(timed.mostInFlight).toBe(2);
  });

  it('refuses a field of the message or of the options that publish() does not know, writing nothing', async () => {
    const outbox = app.get(Outbox);
    const message = { to: 'scripted', address: 'credits', payload: {}, id: 'misspelt' };
    await inTransaction(async (transaction) => {
      await expect(outbox.publish({ ...message, orderKey: 'acc-1' } as never, { transaction })).rejects.toThrow(IdempotencyOutboxError);
      await expect(outbox.publish({ ...message, orderKey: 'acc-1' } as never, { transaction })).rejects.toThrow(/`orderKey`, which publish\(\) does not know/);
      await expect(outbox.publish(message, { transaction, timeout: 5 } as never)).rejects.toThrow(/the options has `timeout`/);
      await expect(outbox.publish({ ...message, delay: '1s', availableAt: new Date() }, { transaction })).rejects.toThrow('give `delay` or `availableAt`, not both');
      await expect(outbox.publish({ ...message, delay: 'soon' as never }, { transaction })).rejects.toThrow(IdempotencyOutboxError);
    });
    expect(await db.query("SELECT id FROM outbox_messages WHERE id = 'misspelt'")).toEqual([]);
  });

  it('sends a message with a delay, or an availableAt, no sooner than that, and counts no lag for it before', async () => {
    const began = Date.now();
    await inTransaction(async (transaction) => {
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: {}, id: 'delayed', delay: '1s' }, { transaction });
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: {}, id: 'available-at', availableAt: new Date(began + 1_500) }, { transaction });
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: {}, id: 'at-once' }, { transaction });
    });
    await until(async () => ['delayed', 'available-at', 'at-once'].every((id) => timed.idsReceived().includes(id)), 'all three were sent');
    expect(timed.receivedAt.get('delayed')! - began).toBeGreaterThanOrEqual(1_000);
    expect(timed.receivedAt.get('available-at')! - began).toBeGreaterThanOrEqual(1_500);
    expect(timed.receivedAt.get('at-once')! - began).toBeLessThan(1_000);

    await inTransaction((transaction) => app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: {}, id: 'in-an-hour', delay: '1h' }, { transaction }));
    await db.query("UPDATE outbox_messages SET created_at = now() - interval '10 minutes' WHERE id = 'in-an-hour'");
    const health = await app.get(IdempotencyHealthIndicator).isHealthy();
    expect({ status: health.idempotency.status, outbox: health.idempotency.outbox }).toEqual({ status: 'up', outbox: { lagSeconds: 0, deadLetters: 0 } });
    expect(timed.idsReceived()).not.toContain('in-an-hour');
  });
});

describe('the outbox table at start-up', () => {
  it('refuses to start with an outbox whose table is missing, naming the migration', async () => {
    const db = await createTestDatabase();
    try {
      await expect(
        startDemoApp('express', db.url, [], false, { outbox: { publishers: { scripted: new ScriptedBroker() } } }),
      ).rejects.toThrow(/The outbox \(table outbox_messages\) lacks .*the table outbox_messages.*CreateOutboxMessagesTable1796428800000/);
    } finally {
      await db.drop();
    }
  });
});

describe('the relay between two polls (pollInterval 1h: it moves only when woken)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const idle = new ScriptedBroker();
  const relay = { pollInterval: '1h', publishTimeout: '300ms', retryDelay: '50ms', maxRetryDelay: '50ms', maxAttempts: 3 } as const;
  const options = { purge: { interval: false as const }, outbox: { publishers: { scripted: idle }, relay } };
  const publishAlone = async (id: string) => {
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: { id }, id }, { transaction: (sql) => runner.query(sql) });
    await runner.commitTransaction();
    await runner.release();
  };

  beforeAll(async () => {
    db = await createOutboxDatabase();
    ({ app } = await startDemoApp('express', db.url, [], false, options));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('sends 12 messages of one ordering key written together one after the other as the broker confirms them, none waiting for a poll', async () => {
    const ids = Array.from({ length: 12 }, (_, index) => `drained-${index}`);
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    for (const id of ids) {
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: { id }, id, orderingKey: 'drained' }, { transaction: (sql) => runner.query(sql) });
    }
    await runner.commitTransaction();
    await runner.release();
    await until(async () => ids.every((id) => idle.idsReceived().includes(id)), 'all 12 were sent');
    expect(idle.idsReceived().filter((id) => ids.includes(id))).toEqual(ids);
  });

  it('publishes the messages of one ordering key in the order their transactions wrote them, which is the order they committed', async () => {
    const ids = Array.from({ length: 12 }, (_, index) => `overlapping-${index}`);
    const clients = await Promise.all(ids.map(() => db.connect()));
    try {
      await Promise.all(clients.map((client) => client.query('BEGIN')));
      const written: number[] = [];
      const writes = ids.map((id, index) =>
        app
          .get(Outbox)
          .publish({ to: 'scripted', address: 'credits', payload: { id }, id, orderingKey: 'overlapping' }, { transaction: (sql) => clients[index].query(sql) })
          .then(() => written.push(index)),
      );
      // Each transaction commits once it has written, the one that began last first: never in the order they began, unless the writes force it.
      const committed: string[] = [];
      const done = new Set<number>();
      while (committed.length < ids.length) {
        await Promise.race(writes.filter((_, index) => !done.has(index)));
        const index = Math.max(...written.filter((candidate) => !done.has(candidate)));
        done.add(index);
        await clients[index].query('COMMIT');
        committed.push(ids[index]);
      }
      expect(written.map((index) => ids[index])).toEqual(committed);
      await until(async () => ids.every((id) => idle.idsReceived().includes(id)), 'all 12 were sent');
      expect(idle.idsReceived().filter((id) => ids.includes(id))).toEqual(committed);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('retries a failed publish when its delay ends, not at the next poll, telling the publisher the attempt and the last error', async () => {
    idle.failures.set('retried', 1);
    await publishAlone('retried');
    await until(async () => idle.idsReceived().includes('retried'), 'retried was sent on its retry');
    expect(idle.told.get('retried')!.map(({ attempt, lastError }) => ({ attempt, lastError }))).toEqual([
      { attempt: 1, lastError: undefined },
      { attempt: 2, lastError: 'broker refused retried' },
    ]);
  });

  it('aborts the signal of a publish the broker did not confirm within publishTimeout, and retries it', async () => {
    idle.unconfirmed.add('unconfirmed');
    await publishAlone('unconfirmed');
    await until(async () => idle.idsReceived().includes('unconfirmed'), 'unconfirmed was sent on its retry');
    const [first, second] = idle.told.get('unconfirmed')!;
    expect({ aborted: first.signal.aborted, timeoutMs: first.timeoutMs }).toEqual({ aborted: true, timeoutMs: 300 });
    expect({ attempt: second.attempt, lastError: second.lastError, aborted: second.signal.aborted }).toEqual({
      attempt: 2,
      lastError: 'no confirmation from the broker within 300 ms',
      aborted: false,
    });
  });

  it('parks a message its publisher refused for good (IdempotencyPublishRefusedError) as a dead letter at once', async () => {
    idle.rejections.set('refused-for-good', new IdempotencyPublishRefusedError('the payload is too large for the queue'));
    await publishAlone('refused-for-good');
    const row = async () =>
      (await db.query<{ dead: boolean; attempts: number; last_error: string }>("SELECT dead_lettered_at IS NOT NULL AS dead, attempts, last_error FROM outbox_messages WHERE id = 'refused-for-good'"))[0];
    await until(async () => (await row()).dead, 'refused-for-good is a dead letter');
    expect(await row()).toEqual({ dead: true, attempts: 1, last_error: 'the payload is too large for the queue' });
    expect(idle.attempts.get('refused-for-good')).toBe(1);
  });

  it('closes at once when closed right after it started, while its LISTEN connection is being opened', async () => {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const idempotency = { ...options, outbox: { ...options.outbox, publishers: { scripted: new ScriptedBroker() } } };
      const started = (await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url, idempotency })] }).compile()).createNestApplication({ logger: false });
      await started.init();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still closing after 10 s'), 10_000)));
      expect({ attempt, closed: await Promise.race([started.close().then(() => 'closed'), deadline]) }).toEqual({ attempt, closed: 'closed' });
      clearTimeout(timer);
    }
  });
});

describe('a relay whose dead letters let their keys go (deadLetterHoldsKey: false, pollInterval 1h)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const flaky = new ScriptedBroker();

  beforeAll(async () => {
    db = await createOutboxDatabase();
    ({ app } = await startDemoApp('express', db.url, [], false, {
      purge: { interval: false },
      outbox: { publishers: { scripted: flaky }, relay: { pollInterval: '1h', maxAttempts: 1, deadLetterHoldsKey: false } },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('sends the next message of a key once its dead letter is parked, and a requeued dead letter after it', async () => {
    const ids = ['let-go-dead', 'let-go-next'];
    flaky.failures.set('let-go-dead', 1);
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    for (const id of ids) {
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: { id }, id, orderingKey: 'let-go' }, { transaction: (sql) => runner.query(sql) });
    }
    await runner.commitTransaction();
    await runner.release();
    await until(async () => flaky.idsReceived().includes('let-go-next'), 'the message after the dead letter was sent');
    // Through IdempotencyAdmin's former, deprecated names of OutboxAdmin's methods, which still answer.
    const admin = app.get(IdempotencyAdmin);
    expect((await admin.outboxDeadLetters()).map((letter) => letter.id)).toEqual(['let-go-dead']);
    expect(await admin.requeueDeadLetters({ ids: ['let-go-dead'], reason: 'broker fixed' })).toEqual(['let-go-dead']);
    await until(async () => flaky.idsReceived().includes('let-go-dead'), 'the requeued dead letter was sent');
    expect(flaky.idsReceived()).toEqual(['let-go-next', 'let-go-dead']);
  });
});

describe('a relay driven by runOnce() (autoStart: false), and its stats()', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const driven = new ScriptedBroker();

  beforeAll(async () => {
    db = await createOutboxDatabase();
    ({ app } = await startDemoApp('express', db.url, [], false, {
      purge: { interval: false },
      outbox: { publishers: { scripted: driven }, relay: { autoStart: false, retryDelay: '50ms', maxRetryDelay: '50ms', publishTimeout: '300ms' } },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('sends only when runOnce() is called, answering what became of the batch', async () => {
    const relay = app.get(OutboxRelay);
    expect(relay.stats()).toEqual({ running: false, publishesInFlight: 0, nextRetryAt: null });
    driven.failures.set('driven-2', 1);
    driven.unconfirmed.add('driven-3');
    const runner = app.get(DataSource).createQueryRunner();
    await runner.startTransaction();
    for (const id of ['driven-1', 'driven-2', 'driven-3']) {
      await app.get(Outbox).publish({ to: 'scripted', address: 'credits', payload: { id }, id }, { transaction: (sql) => runner.query(sql) });
    }
    await runner.commitTransaction();
    await runner.release();
    expect(driven.idsReceived()).toEqual([]);

    const running = relay.runOnce();
    await until(async () => relay.stats().publishesInFlight === 1, 'only the unconfirmed publish waits for the broker');
    expect(await running).toEqual({ taken: 3, published: 1, failed: 2, deadLettered: 0 });
    expect(driven.idsReceived()).toEqual(['driven-1']);
    expect(relay.stats()).toEqual({ running: false, publishesInFlight: 0, nextRetryAt: expect.any(Date) });

    let again = await relay.runOnce();
    while (again.taken === 0) {
      again = await relay.runOnce();
    }
    expect(again).toEqual({ taken: 2, published: 2, failed: 0, deadLettered: 0 });
    expect(await relay.runOnce()).toEqual({ taken: 0, published: 0, failed: 0, deadLettered: 0 });
    expect(driven.idsReceived().sort()).toEqual(['driven-1', 'driven-2', 'driven-3']);
  });
});

describe.each(['pg', 'typeorm'])('a relay whose database connection ends mid-batch (data layer: %s)', (layer) => {
  const RELAY = resolve('dist/test-apps/test/apps/outbox/gated-relay.main.js');
  let db: TestDatabase;
  let relay: DemoProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const { sql } of await schemaSql()) {
      await db.query(sql);
    }
  });

  afterAll(async () => {
    await relay?.kill('SIGKILL');
    await db?.drop();
  });

  it('survives its batch connection terminated while publishes wait for the broker: it logs, and sends the message again', async () => {
    relay = await startAppProcess(RELAY, { DATABASE_URL: db.url, LAYER: layer }, '/ping');
    const alive = () => {
      if (relay!.child.exitCode !== null) {
        throw new Error(`the relay exited with ${relay!.child.exitCode}:\n${relay!.output()}`);
      }
    };
    const get = async (path: string) => (await fetch(`${relay!.baseUrl}${path}`)).json() as Promise<string[]>;
    await db.query(`INSERT INTO outbox_messages (id, destination, address, headers, payload) VALUES ('cut-1', 'gated', 'anywhere', '{}', '{}')`);
    await until(async () => (await get('/held')).includes('cut-1'), 'the publish of cut-1 waits at the gate');
    const terminated = await db.query(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'",
    );
    expect(terminated).toEqual([{ ended: true }]);
    await fetch(`${relay.baseUrl}/gate`, { method: 'POST' });
    await until(async () => {
      alive();
      return (await db.query<{ sent: boolean }>("SELECT dispatched_at IS NOT NULL AS sent FROM outbox_messages WHERE id = 'cut-1'"))[0].sent;
    }, 'cut-1 was sent and marked dispatched');
    expect(relay.output()).toContain('The outbox relay of outbox_messages failed a batch');
    // Confirmed in the batch whose COMMIT could not happen, then in the next one.
    expect(await get('/published')).toEqual(['cut-1', 'cut-1']);
  });
});
