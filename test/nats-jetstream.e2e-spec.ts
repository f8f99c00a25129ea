import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { transportContract, type TransportHarness } from 'nestjs-idempotent-consumer/testing';
import { resolve } from 'node:path';
import { JETSTREAM_RUN, JETSTREAM_STREAM, JETSTREAM_SUBJECT_TOKEN, JETSTREAM_SUBJECTS } from './apps/jetstream/jetstream-fixture.module.js';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { NATS_URL, natsAvailable } from './support/brokers.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
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

  /** The stream sequence numbers of each contract message's publishes, to match JetStream's termination advisories. */
  const published = new Map<string, number[]>();
  /** Every message JetStream terminated (what it does in place of dead-lettering), as its advisories announce them. */
  const terminated: { readonly stream_seq: number; readonly deliveries: number }[] = [];
  let contractDurable = '';
  const contractConsumers = () => [JETSTREAM_SUBJECTS.credit, JETSTREAM_SUBJECTS.byPayload, JETSTREAM_SUBJECTS.poison].map((subject) => consumerName(contractDurable, subject));
  async function publishOf(key: string, subject: string, payload: object, msgID?: string): Promise<void> {
    const { seq } = await publish(subject, payload, msgID);
    published.set(key, [...(published.get(key) ?? []), seq]);
  }
  const terminationsOf = (key: string) => terminated.filter(({ stream_seq }) => published.get(key)?.includes(stream_seq));

  /**
   * Credits keyed by the Nats-Msg-Id header (the `credit` subject), by the payload's id for
   * copies published under new Nats-Msg-Ids (`byPayload`), and the `poison` handler (maxAttempts 3),
   * on durable consumers of their own for each check; ack_wait 3 s, after which JetStream
   * redelivers what a killed process held.
   */
  const harness: TransportHarness = {
    async start({ databaseUrl } = {}) {
      const app = await startConsumer(contractDurable, { ACK_WAIT_MS: '3000' }, databaseUrl);
      return { logs: () => app.output().split('\n'), stop: () => app.kill('SIGTERM'), kill: () => app.kill('SIGKILL') };
    },
    publish: ({ key }) => publishOf(key, JETSTREAM_SUBJECTS.credit, { id: key }, key),
    // JetStream drops a publish whose Nats-Msg-Id it saw in its de-duplication window: a producer that
    // retries under a fresh id is what makes several stream messages of one event, keyed by the payload.
    publishCopies: async ({ key }, copies) => {
      await Promise.all(Array.from({ length: copies }, () => publishOf(key, JETSTREAM_SUBJECTS.byPayload, { id: key }, crypto.randomUUID())));
    },
    publishPoison: ({ key }) => publishOf(key, JETSTREAM_SUBJECTS.poison, { id: key }, key),
    publishWithoutKey: ({ key }) => publishOf(key, JETSTREAM_SUBJECTS.credit, { id: key }),
    effects: async ({ key }) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM effects WHERE key = $1', [key]))[0].n),
    async block() {
      const holder = await db.connect();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE effects IN SHARE MODE');
      return async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      };
    },
    drained: async () => (await Promise.all(contractConsumers().map(drained))).every(Boolean),
    deadLettered: async ({ key }) => {
      await nats.flush();
      return terminationsOf(key).length;
    },
    query: (sql, params) => db.query(sql, params),
    get databaseUrl() {
      return db.url;
    },
    poisonAttempts: 3,
    missingKey: 'the Nats-Msg-Id header is missing',
    also: {
      databaseOutage: async (_, consumer) => expect(consumer.logs().some((line) => line.includes('requeued'))).toBe(true),
      poison: async ({ key }) => expect(terminationsOf(key).map(({ deliveries }) => deliveries)).toEqual([3]),
    },
  };

  describe('the transport contract', () => {
    let check = 0;
    let subscription: Subscription;

    beforeAll(async () => {
      subscription = nats.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${JETSTREAM_STREAM}.>`, {
        callback: (_, message) => {
          terminated.push(message.json());
        },
      });
      await nats.flush();
    });

    beforeEach(() => {
      contractDurable = `contract-${++check}`;
    });

    afterAll(() => {
      subscription.unsubscribe();
    });

    for (const { name, run } of transportContract(harness)) {
      it(name, run);
    }
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
