import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { resolve } from 'node:path';
import { JETSTREAM_RUN, JETSTREAM_STREAM, JETSTREAM_SUBJECT_TOKEN, JETSTREAM_SUBJECTS } from './apps/jetstream/jetstream-fixture.module.js';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { NATS_URL, natsAvailable } from './support/brokers.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const JETSTREAM_APP = resolve('dist/test-apps/test/apps/jetstream/jetstream-app.main.js');
const describeWithBroker = (await natsAvailable()) ? describe : describe.skip;

/** A durable consumer's name in this run: its deliver subject (the durable's name) is the run's alone. */
const ofRun = (durable: string) => `${durable}-${JETSTREAM_RUN}`;
/** The plugin names each durable consumer `<durable>-<subject with dots as underscores>`. */
const consumerName = (durable: string, subject: string) => `${ofRun(durable)}-${subject.replaceAll('.', '_')}`;

describeWithBroker('exactly-once NATS JetStream consumers (@nestjs-plugins/nestjs-nats-jetstream-transport)', () => {
  let db: TestDatabase;
  let nats: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const running: DemoProcess[] = [];

  /** The suite's app as a process of its own, consuming through the durable consumers named `durable` (of this run). */
  async function startConsumer(durable: string, env: Record<string, string> = {}, databaseUrl = db.url): Promise<DemoProcess> {
    const app = await startAppProcess(JETSTREAM_APP, { DATABASE_URL: databaseUrl, NATS_URL, JETSTREAM_RUN, DURABLE: ofRun(durable), ...env }, '/ping');
    running.push(app);
    return app;
  }

  const publish = (subject: string, payload: object, msgID?: string) => js.publish(subject, JSON.stringify(payload), msgID ? { msgID } : {});
  const effects = async (handler: string, key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM effects WHERE handler = $1 AND key = $2', [handler, key]))[0].n);
  const claims = async (key: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [key]))[0].n);

  /** The terminations JetStream announces for one consumer, as they arrive. */
  async function terminations(consumer: string): Promise<{ readonly seen: { deliveries: number }[]; readonly subscription: Subscription }> {
    const seen: { deliveries: number }[] = [];
    const subscription = nats.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${JETSTREAM_STREAM}.${consumer}`, {
      callback: (_, message) => {
        seen.push(message.json());
      },
    });
    await nats.flush();
    return { seen, subscription };
  }

  /** The consumer has nothing left to deliver and nothing unacknowledged. */
  async function drained(consumer: string): Promise<boolean> {
    const info = await jsm.consumers.info(JETSTREAM_STREAM, consumer);
    return info.num_pending === 0 && info.num_ack_pending === 0;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query(FIXTURE_TABLES_SQL);
    nats = await connect({ servers: NATS_URL });
    js = jetstream(nats);
    jsm = await jetstreamManager(nats);
    await jsm.streams.delete(JETSTREAM_STREAM).catch(() => undefined);
    await jsm.streams.add({ name: JETSTREAM_STREAM, subjects: [`${JETSTREAM_SUBJECT_TOKEN}.>`] });
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((app) => app.kill('SIGKILL')));
  });

  afterAll(async () => {
    await jsm?.streams.delete(JETSTREAM_STREAM).catch(() => undefined);
    await nats?.close();
    await db?.drop();
  });

  it('50 concurrent deliveries of one event (one payload id, 50 publishes under new Nats-Msg-Ids) → one effect, all acked', async () => {
    const durable = 'concurrent';
    await startConsumer(durable);
    // JetStream drops a publish whose Nats-Msg-Id it saw in its de-duplication window: a producer that
    // retries under a fresh id is what makes 50 stream messages of one event, keyed by the payload.
    await Promise.all(Array.from({ length: 50 }, () => publish(JETSTREAM_SUBJECTS.byPayload, { id: 'event-50' }, crypto.randomUUID())));
    const consumer = consumerName(durable, JETSTREAM_SUBJECTS.byPayload);
    await until(() => drained(consumer), 'the 50 deliveries are acknowledged', 30_000);
    expect(await effects('by-payload', 'event-50')).toBe(1);
    expect(await claims('event-50')).toBe(1);
  });

  it('SIGKILL of the consumer mid-handler → redelivered after ack_wait to the next process → one effect', async () => {
    const durable = 'crash';
    const first = await startConsumer(durable, { HOLD: 'true', ACK_WAIT_MS: '3000' });
    await publish(JETSTREAM_SUBJECTS.credit, { id: 'crash-1', hold: true }, 'crash-1');
    await until(async () => first.output().includes('holding crash-1'), 'the first process holds the message mid-handler');
    await first.kill('SIGKILL');
    expect(await effects('credit', 'crash-1')).toBe(0);
    await startConsumer(durable, { ACK_WAIT_MS: '3000' });
    const consumer = consumerName(durable, JETSTREAM_SUBJECTS.credit);
    await until(async () => (await effects('credit', 'crash-1')) === 1 && (await drained(consumer)), 'the redelivery is processed and acked', 30_000);
    expect(await effects('credit', 'crash-1')).toBe(1);
  });

  it('a 2 s database outage → naked and retried, nothing terminated, one effect', async () => {
    const durable = 'outage';
    const proxy = new TcpProxy('127.0.0.1', Number(new URL(db.url).port || 5432));
    await proxy.start();
    try {
      const app = await startConsumer(durable, {}, proxy.url(db.url));
      const consumer = consumerName(durable, JETSTREAM_SUBJECTS.credit);
      const { seen, subscription } = await terminations(consumer);
      proxy.refuse();
      await publish(JETSTREAM_SUBJECTS.credit, { id: 'outage-1' }, 'outage-1');
      await until(async () => app.output().includes('requeued'), 'a failed delivery is naked for a retry');
      await new Promise((resolve) => setTimeout(resolve, 2_000)); // the outage itself lasts 2 s
      proxy.accept();
      await until(async () => (await effects('credit', 'outage-1')) === 1 && (await drained(consumer)), 'the retry after the outage commits', 30_000);
      subscription.unsubscribe();
      expect(seen).toEqual([]);
      expect(await effects('credit', 'outage-1')).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('a poison message → term after maxAttempts (3) deliveries, no more redelivery, nothing committed', async () => {
    const durable = 'poison';
    await startConsumer(durable);
    const consumer = consumerName(durable, JETSTREAM_SUBJECTS.poison);
    const { seen, subscription } = await terminations(consumer);
    await publish(JETSTREAM_SUBJECTS.poison, { id: 'poison-1' }, 'poison-1');
    await until(async () => seen.length === 1, 'JetStream announces the termination', 30_000);
    subscription.unsubscribe();
    expect(seen[0].deliveries).toBe(3);
    expect(await drained(consumer)).toBe(true);
    expect(await effects('poison', 'poison-1')).toBe(0);
    expect(await claims('poison-1')).toBe(0);
  });

  it("logs each failed attempt once, in the module's own line, not again as Nest's RpcExceptionsHandler error; an error outside the module still is", async () => {
    const durable = 'one-line';
    const app = await startConsumer(durable);
    const { seen, subscription } = await terminations(consumerName(durable, JETSTREAM_SUBJECTS.poison));
    await publish(JETSTREAM_SUBJECTS.poison, { id: 'one-line-1' }, 'one-line-1');
    await until(async () => seen.length === 1, 'JetStream announces the termination', 30_000);
    subscription.unsubscribe();
    await publish(JETSTREAM_SUBJECTS.notIdempotent, { id: 'plain-1' }, 'plain-1');
    await until(async () => app.output().includes('not idempotent: plain-1 failed'), "Nest logs the error of the handler that is not idempotent");
    const lines = app.output().split('\n');
    const failures = lines.filter((line) => line.includes('this message can never be processed'));
    expect(failures).toHaveLength(3);
    expect(failures.every((line) => line.includes('[Idempotency]'))).toBe(true);
    expect(failures.every((line) => line.includes(`nats-jetstream message 'one-line-1' for '${JETSTREAM_SUBJECTS.poison}'`))).toBe(true);
    expect(lines.filter((line) => line.includes('RpcExceptionsHandler'))).toEqual([expect.stringContaining('not idempotent: plain-1 failed')]);
  });

  it("refuses to start, before the plugin connects, when deliverTo is inside its streamConfig's subjects, naming the handler, the subject and the stream's subjects", async () => {
    const start = startConsumer('refused-cycle', { DELIVER_TO: JETSTREAM_SUBJECT_TOKEN, STREAM_SUBJECTS: `${JETSTREAM_SUBJECT_TOKEN}.>,i27rl-jetstream-extra.>` });
    await expect(start).rejects.toThrow(new RegExp(`IdempotencyOptionsError.*JetStreamFixtureController\\.(credit|byPayload|poison) deliver to '${JETSTREAM_SUBJECT_TOKEN}\\.\\*'`, 's'));
    await expect(start).rejects.toThrow(new RegExp(`stream '${JETSTREAM_STREAM}' stores \\(subjects: '${JETSTREAM_SUBJECT_TOKEN}\\.>', 'i27rl-jetstream-extra\\.>'\\)`));
    // Refused before the plugin's listen(): it would have added the extra subject to the stream.
    expect((await jsm.streams.info(JETSTREAM_STREAM)).config.subjects).toEqual([`${JETSTREAM_SUBJECT_TOKEN}.>`]);
  });

  it("turns nats-server's refusal of a deliver subject its stream stores (a stream declared elsewhere) into a boot error naming the handler", async () => {
    const start = startConsumer('refused-cycle-server', { DELIVER_TO: JETSTREAM_SUBJECT_TOKEN });
    await expect(start).rejects.toThrow(
      new RegExp(`IdempotencyOptionsError: nats-server refused the NATS JetStream consumer of JetStreamFixtureController\\.\\w+ \\(.*cycle.*\\): it delivers to '${JETSTREAM_SUBJECT_TOKEN}\\.\\*'`),
    );
  });

  it.each([
    ['manualAck left out (the client acks as soon as the handler was called)', 'refused-auto-ack', { MANUAL_ACK: 'false' }, /manualAck: undefined/],
    ["ackPolicy 'None' (nothing is ever redelivered)", 'refused-ack-none', { ACK_POLICY: 'None' }, /ackPolicy: 'None'/],
    ["ackPolicy 'All' (one ack acknowledges every earlier message in flight)", 'refused-ack-all', { ACK_POLICY: 'All' }, /ackPolicy: 'All'/],
  ])('refuses to start with %s, naming the handler', async (_, durable, env: Record<string, string>, setting) => {
    const start = startConsumer(durable, env);
    await expect(start).rejects.toThrow(setting);
    await expect(start).rejects.toThrow(/IdempotencyOptionsError.*JetStreamFixtureController\.(credit|byPayload|poison) is idempotent/s);
  });
});
