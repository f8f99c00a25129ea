import type { INestApplication } from '@nestjs/common';
import amqplib from 'amqplib';
import { IDEMPOTENCY_CHANNELS, IdempotencyMetricsService, RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { resolve } from 'node:path';
import { createClient } from 'redis';
import { consumeCredits } from '../apps/demo-api/src/messaging/rabbitmq.js';
import { LeaseShapesController, LeaseShapesModule, PROVIDER } from './fixtures/lease-shapes.module.js';
import { RABBITMQ_URL, REDIS_URL, rabbitMqAvailable, redisAvailable } from './support/brokers.js';
import { post, startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { PaymentProvider } from './support/payment-provider.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/** The demo with the lease-mode handlers, built by `npm test`. */
const LEASE_APP = resolve('dist/test-apps/test/apps/lease/lease-app.main.js');

const brokers = (await redisAvailable()) && (await rabbitMqAvailable());
const describeWithBrokers = brokers ? describe : describe.skip;

describeWithBrokers('lease mode, for handlers with external effects', () => {
  let db: TestDatabase;
  const provider = new PaymentProvider();
  const redis = createClient({ url: REDIS_URL });
  const prefix = `idempotency-lease-e2e-${process.pid}:`;
  let app: INestApplication;
  let baseUrl: string;
  let connection: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  const queue = `lease-e2e-${process.pid}-${Date.now()}`;
  const children: DemoProcess[] = [];
  let orders = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    await provider.start();
    PROVIDER.url = provider.url;
    await redis.connect();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [LeaseShapesModule], false, {
      purge: { interval: false },
      stores: { redis: new RedisLeaseStore(redis, prefix) },
    }));
    await consumeCredits(app, RABBITMQ_URL, { name: queue, type: 'classic' });
    connection = await amqplib.connect(RABBITMQ_URL);
    channel = await connection.createConfirmChannel();
  });

  afterAll(async () => {
    await app?.close();
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
    await channel?.deleteQueue(queue);
    await channel?.deleteQueue(`${queue}.dead`);
    await connection?.close();
    await redis.close();
    await provider.close();
    await db?.drop();
  });

  describe.each(['postgres', 'redis'])('on the %s store', (store) => {
    const newOrder = () => `${store}-order-${++orders}`;
    /**
     * A charge of `order`; `staging` (hold, fail, extend) goes in headers, outside the fingerprint.
     * `renewal` picks the handler: renewed by default (up to 10 minutes), up to 2 s (`bounded`), or never (`unrenewed`).
     */
    const charge = (
      base: string,
      order: string,
      staging: { hold?: string; fail?: boolean; extend?: boolean; renewal?: 'bounded' | 'unrenewed'; signal?: AbortSignal } = {},
    ) =>
      post(
        `${base}/charges/${store}${staging.renewal ? `-${staging.renewal}` : ''}/${order}`,
        { cents: 1000 },
        {
          'Idempotency-Key': order,
          ...(staging.hold ? { 'x-hold': staging.hold } : {}),
          ...(staging.fail ? { 'x-fail': 'true' } : {}),
          ...(staging.extend ? { 'x-extend': 'true' } : {}),
        },
        staging.signal,
      );
    /** What the store holds of `order`: each entry, leased or completed (with its recorded status). */
    async function entries(order: string): Promise<{ leased: boolean; status: number | null }[]> {
      if (store === 'postgres') {
        const rows = await db.query<{ lease_token: string | null; response_status: number | null }>(
          'SELECT lease_token, response_status FROM processed_messages WHERE message_id = $1',
          [order],
        );
        return rows.map((row) => ({ leased: row.lease_token !== null, status: row.response_status }));
      }
      const values = await Promise.all((await redis.keys(`${prefix}*:${order}`)).map((key) => redis.get(key)));
      return values
        .filter((value) => value !== null)
        .map((value) => JSON.parse(value) as { t?: string; r?: { s: number | null } })
        .map((value) => ({ leased: value.t !== undefined, status: value.r?.s ?? null }));
    }
    const renewals = () => app.get(IdempotencyMetricsService).leaseRenewals().find((counts) => counts.consumer === `POST /charges/${store}/:order`);
    const runs = (order: string) => app.get(LeaseShapesController).runs.get(order) ?? 0;
    /** The provider's calls and charges for `order`: it knows the order by the handler's downstream key only. */
    const remote = (order: string) => {
      const keys = [...provider.charges.entries()].filter(([, made]) => made.order === order).map(([key]) => key);
      return { keys, calls: keys.reduce((sum, key) => sum + (provider.calls.get(key) ?? 0), 0), charges: keys.length };
    };
    /** Redelivers until the lease of a dead or slow twin no longer answers 409. */
    async function redeliver(base: string, order: string, staging: { hold?: string } = {}) {
      let answer = await charge(base, order, staging);
      await until(async () => {
        if (answer.status !== 409) return true;
        answer = await charge(base, order, staging);
        return false;
      }, 'the lease of the twin expired');
      return answer;
    }

    it('a process SIGKILLed after the remote call, before completing: once the lease expires the redelivery calls again with the same downstream key and completes once', async () => {
      const order = newOrder();
      const gate = `crash-${order}`;
      provider.hold(gate);
      const first = await startAppProcess(LEASE_APP, { DATABASE_URL: db.url, REDIS_URL, REDIS_PREFIX: prefix, PROVIDER_URL: provider.url }, '/accounts/ping');
      children.push(first);
      const inFlight = expect(charge(first.baseUrl, order, { hold: gate })).rejects.toThrow('fetch failed');
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the handler charged and waits before completing');
      await first.kill('SIGKILL');
      await inFlight;
      provider.release(gate);

      const redelivered = await redeliver(baseUrl, order, { hold: gate });
      expect(redelivered.status).toBe(201);
      const again = await charge(baseUrl, order, { hold: gate });
      expect(again).toMatchObject({ status: 201, body: redelivered.body });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      // Two calls to the provider under one downstream key, one charge; one completion, answered to every duplicate.
      expect(remote(order)).toMatchObject({ calls: 2, charges: 1 });
      expect(remote(order).keys).toHaveLength(1);
      expect(runs(order)).toBe(1);
    });

    it('a lease renewed up to a bound shorter than the handler: twins are in flight until the bound, then one takes over; the old holder cannot complete, and its delivery says so', async () => {
      const order = newOrder();
      const gate = `stale-${order}`;
      provider.hold(gate);
      const claimed = performance.now();
      const stale = charge(baseUrl, order, { hold: gate, renewal: 'bounded' });
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the first holder charged and waits');
      let inFlight = 0;
      let takeover = await charge(baseUrl, order, { renewal: 'bounded' });
      await until(async () => {
        if (takeover.status !== 409) return true;
        expect(takeover.body).toMatchObject({ type: 'urn:idempotency:in-flight' });
        inFlight++;
        takeover = await charge(baseUrl, order, { renewal: 'bounded' });
        return false;
      }, 'a twin took the message over');
      const tookOverAfter = performance.now() - claimed;
      expect(takeover.status).toBe(201);
      // Lease 1 s, renewed up to 2 s: held past its first expiry, let go at the bound.
      console.log(`${store}: lease 1 s renewed up to 2 s, held at the provider: ${inFlight} twins answered in flight, taken over after ${Math.round(tookOverAfter)} ms`);
      expect(tookOverAfter).toBeGreaterThan(1_900);
      expect(inFlight).toBeGreaterThan(0);
      const leaseLost: unknown[] = [];
      const onLeaseLost = (message: unknown) => void leaseLost.push(message);
      subscribe(IDEMPOTENCY_CHANNELS.leaseLost, onLeaseLost);
      provider.release(gate);
      const refused = await stale;
      unsubscribe(IDEMPOTENCY_CHANNELS.leaseLost, onLeaseLost);
      expect(leaseLost).toEqual([
        { consumer: expect.any(String), sender: 'default', heldMs: expect.any(Number), leaseMs: 1_000, renewLeaseForMs: 2_000 },
      ]);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ type: 'urn:idempotency:lease-lost', detail: expect.stringContaining('another delivery took it over') });
      expect(refused.headers.get('retry-after')).toBe('1');
      const replay = await charge(baseUrl, order, { renewal: 'bounded' });
      expect(replay).toMatchObject({ status: 201, body: takeover.body });
      expect(runs(order)).toBe(2);
      expect(remote(order)).toMatchObject({ calls: 2, charges: 1 });
      expect(await entries(order)).toEqual([{ leased: false, status: 201 }]);
    });

    it('a handler that runs three leases long keeps its lease, renewed by the module: every twin meanwhile is in flight, and it runs once', async () => {
      const order = newOrder();
      const gate = `slow-${order}`;
      const before = renewals() ?? { renewed: 0, lost: 0, failed: 0 };
      provider.hold(gate);
      const slow = charge(baseUrl, order, { hold: gate });
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the handler charged and waits');
      const started = performance.now();
      const twins: number[] = [];
      await until(async () => {
        twins.push((await charge(baseUrl, order)).status);
        return performance.now() - started > 3_000;
      }, 'three leases went by');
      provider.release(gate);
      const answer = await slow;
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBeNull();
      expect(twins.length).toBeGreaterThan(10);
      expect(new Set(twins)).toEqual(new Set([409]));
      expect(runs(order)).toBe(1);
      expect(remote(order)).toMatchObject({ calls: 1, charges: 1 });
      expect(await entries(order)).toEqual([{ leased: false, status: 201 }]);
      const after = renewals();
      console.log(`${store}: a 1 s lease held over 3 s: ${twins.length} twins, all 409; ${after!.renewed - before.renewed} renewals, ${after!.lost - before.lost} lost; provider calls ${remote(order).calls}`);
      // Every third of a 1 s lease for over 3 s.
      expect(after!.renewed - before.renewed).toBeGreaterThanOrEqual(8);
      expect(after!.lost - before.lost).toBe(0);
    });

    it("a client that disconnects while the handler runs: the handler's success is recorded all the same, and the redelivery replays it (one provider call)", async () => {
      const order = newOrder();
      const gate = `gone-${order}`;
      provider.hold(gate);
      const client = new AbortController();
      const gone = expect(charge(baseUrl, order, { hold: gate, signal: client.signal })).rejects.toThrow(/abort/i);
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the handler charged and waits');
      client.abort();
      await gone;
      await until(() => Promise.resolve(app.get(LeaseShapesController).disconnected.has(order)), 'the server saw its client go');
      provider.release(gate);
      await until(async () => (await entries(order)).every((entry) => !entry.leased), 'the handler settled');
      expect(await entries(order)).toEqual([{ leased: false, status: 201 }]);
      const redelivered = await charge(baseUrl, order);
      expect(redelivered.status).toBe(201);
      expect(redelivered.headers.get('idempotent-replayed')).toBe('true');
      console.log(`${store}: client gone mid-handler, then redelivered: ${runs(order)} run, ${remote(order).calls} provider call, entries ${JSON.stringify(await entries(order))}`);
      expect(runs(order)).toBe(1);
      expect(remote(order)).toMatchObject({ calls: 1, charges: 1 });
    });

    it('a handler that outlives its lease with nobody taking over completes, and its answer is replayed', async () => {
      const order = newOrder();
      const gate = `late-${order}`;
      provider.hold(gate);
      const late = charge(baseUrl, order, { hold: gate, renewal: 'unrenewed' });
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the handler charged and waits');
      const started = performance.now();
      await until(() => Promise.resolve(performance.now() - started > 1_500), 'its 1 s lease expired');
      provider.release(gate);
      const answer = await late;
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBeNull();
      const replay = await charge(baseUrl, order, { renewal: 'unrenewed' });
      expect(replay).toMatchObject({ status: 201, body: answer.body });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(runs(order)).toBe(1);
      expect(remote(order)).toMatchObject({ calls: 1, charges: 1 });
      expect(await entries(order)).toEqual([{ leased: false, status: 201 }]);
    });

    it('50 concurrent duplicates over HTTP: one run of the handler', async () => {
      const order = newOrder();
      const answers = await Promise.all(Array.from({ length: 50 }, () => charge(baseUrl, order)));
      expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
      expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
      expect(runs(order)).toBe(1);
      expect(remote(order)).toMatchObject({ calls: 1, charges: 1 });
    });

    it('50 copies of one RabbitMQ message: one run of the handler, every copy acknowledged', async () => {
      const order = newOrder();
      for (let i = 0; i < 50; i++) {
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: `lease.charge.${store}`, data: { order, cents: 1000 } })), {
          messageId: order,
          persistent: true,
        });
      }
      await channel.waitForConfirms();
      await until(async () => runs(order) === 1 && (await channel.checkQueue(queue)).messageCount === 0, 'every copy is handled');
      expect(runs(order)).toBe(1);
      expect(remote(order)).toMatchObject({ calls: 1, charges: 1 });
      expect((await channel.checkQueue(`${queue}.dead`)).messageCount).toBe(0);
    });

    it('a handler that throws releases its lease: the redelivery processes at once', async () => {
      const order = newOrder();
      expect((await charge(baseUrl, order, { fail: true })).status).toBe(500);
      const retried = await charge(baseUrl, order);
      expect(retried.status).toBe(201);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
      expect(runs(order)).toBe(2);
      expect(remote(order)).toMatchObject({ calls: 2, charges: 1 });
    });

    it('a long handler extends its lease: its twin is told it is in flight, not let in', async () => {
      const order = newOrder();
      const gate = `long-${order}`;
      provider.hold(gate);
      const long = charge(baseUrl, order, { hold: gate, extend: true });
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the handler extended its lease and waits');
      const started = performance.now();
      await until(() => Promise.resolve(performance.now() - started > 1_500), 'the first lease would have expired');
      const twin = await charge(baseUrl, order);
      expect(twin.status).toBe(409);
      expect(twin.body).toMatchObject({ type: 'urn:idempotency:in-flight' });
      provider.release(gate);
      expect((await long).status).toBe(201);
      expect(runs(order)).toBe(1);
    });
  });

  it.each(['postgres', 'redis'])("on Fastify, on the %s store: a client gone mid-handler, the handler's success is recorded all the same, and the redelivery replays it", async (store) => {
    const fastify = await startDemoApp('fastify', db.url, [LeaseShapesModule], false, {
      purge: { interval: false },
      metrics: { registry: false },
      stores: { redis: new RedisLeaseStore(redis, prefix) },
    });
    try {
      const order = `fastify-${store}-order`;
      const gate = `gone-${order}`;
      const charge = (signal?: AbortSignal) =>
        post(`${fastify.baseUrl}/charges/${store}/${order}`, { cents: 1000 }, { 'Idempotency-Key': order, 'x-hold': gate }, signal);
      const controller = fastify.app.get(LeaseShapesController);
      provider.hold(gate);
      const client = new AbortController();
      const gone = expect(charge(client.signal)).rejects.toThrow(/abort/i);
      await until(() => Promise.resolve(provider.waitingAt(gate) === 1), 'the handler charged and waits');
      client.abort();
      await gone;
      await until(() => Promise.resolve(controller.disconnected.has(order)), 'the server saw its client go');
      provider.release(gate);
      const calls = () => [...provider.charges.entries()].filter(([, made]) => made.order === order).reduce((sum, [key]) => sum + (provider.calls.get(key) ?? 0), 0);
      let redelivered = await charge();
      await until(async () => {
        if (redelivered.status !== 409) return true;
        redelivered = await charge();
        return false;
      }, 'the first delivery settled');
      expect(redelivered.status).toBe(201);
      expect(redelivered.headers.get('idempotent-replayed')).toBe('true');
      expect(controller.runs.get(order)).toBe(1);
      expect(calls()).toBe(1);
    } finally {
      await fastify.app.close();
    }
  });

  it('leaves no lease behind on PostgreSQL: each one ended completed, released, or taken over and completed', async () => {
    const leased = await db.query<{ n: string }>(`SELECT count(*) AS n FROM processed_messages WHERE lease_token IS NOT NULL`);
    expect(Number(leased[0].n)).toBe(0);
    expect(Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM processed_messages`))[0].n)).toBeGreaterThan(0);
  });
});
