import type { INestApplication } from '@nestjs/common';
import { type ClientProxy, ClientProxyFactory, NatsRecordBuilder, RmqRecordBuilder, Transport } from '@nestjs/microservices';
import { headers } from '@nats-io/transport-node';
import amqplib from 'amqplib';
import { firstValueFrom, toArray } from 'rxjs';
import { consumeCredits } from '../apps/demo-api/src/messaging/rabbitmq.js';
import { ReplyStreamsModule } from './fixtures/reply-streams.module.js';
import { consumeNats, NATS_URL, natsAvailable, RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** One request-reply transport: how its consumer starts, and how a caller sends a request under an id of its choosing. */
interface RequestReply {
  readonly name: string;
  readonly available: boolean;
  readonly consume: (app: INestApplication, run: string) => Promise<void>;
  readonly client: (run: string) => ClientProxy;
  /** Deletes what the suite declared on the broker. */
  readonly cleanup: (run: string) => Promise<void>;
  /** The request's data with the id its transport carries: the AMQP messageId property, the Nats-Msg-Id header. */
  readonly record: (data: unknown, id: string) => unknown;
}

const TRANSPORTS: RequestReply[] = [
  {
    name: 'RabbitMQ',
    available: await rabbitMqAvailable(),
    consume: (app, run) => consumeCredits(app, RABBITMQ_URL, { name: `reply-streams-${run}`, type: 'classic' }),
    client: (run) =>
      ClientProxyFactory.create({
        transport: Transport.RMQ,
        options: { urls: [RABBITMQ_URL], queue: `reply-streams-${run}`, queueOptions: { durable: true, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': `reply-streams-${run}.dead` } } },
      }),
    record: (data, id) => new RmqRecordBuilder(data).setOptions({ messageId: id }).build(),
    cleanup: async (run) => {
      const connection = await amqplib.connect(RABBITMQ_URL);
      const channel = await connection.createChannel();
      await channel.deleteQueue(`reply-streams-${run}`);
      await channel.deleteQueue(`reply-streams-${run}.dead`);
      await connection.close();
    },
  },
  {
    name: 'NATS',
    available: await natsAvailable(),
    consume: async (app) => {
      await consumeNats(app);
    },
    client: () => ClientProxyFactory.create({ transport: Transport.NATS, options: { servers: [NATS_URL] } }),
    record: (data, id) => {
      const natsHeaders = headers();
      natsHeaders.set('Nats-Msg-Id', id);
      return new NatsRecordBuilder(data).setHeaders(natsHeaders).build();
    },
    cleanup: async () => {},
  },
];

/** The tests of one transport. */
function replyStreamTests(transport: RequestReply): void {
  let db: TestDatabase;
  let app: INestApplication;
  let client: ClientProxy;
  const run = `${process.pid}-${Date.now()}`;

  const effects = async (key: string) => Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM effects WHERE key = $1`, [key]))[0].n);
  const send = (pattern: string, key: string) => firstValueFrom(client.send(pattern, transport.record({ key }, key)).pipe(toArray()));

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app } = await startDemoApp('express', db.url, [ReplyStreamsModule]));
    await db.query('CREATE TABLE effects (handler text NOT NULL, key text NOT NULL)');
    await transport.consume(app, run);
    client = transport.client(run);
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await app?.close();
    await transport.cleanup(run);
    await db?.drop();
  });

  it('Nest itself answers every value, in order (the handler without the decorator)', async () => {
    expect(await send('streams.plain-pages', `plain-${run}`)).toEqual([1, 2, 3].map((page) => ({ page, key: `plain-${run}` })));
  });

  it('the first delivery and its duplicates answer every value, in order; the handler ran once', async () => {
    const key = `pages-${transport.name}-${run}`;
    const pages = [1, 2, 3].map((page) => ({ page, key }));
    expect(await send('streams.pages', key)).toEqual(pages);
    expect(await send('streams.pages', key)).toEqual(pages);
    expect(await send('streams.pages', key)).toEqual(pages);
    expect(await effects(key)).toBe(1);
  });
}

for (const transport of TRANSPORTS) {
  (transport.available ? describe : describe.skip)(`a handler that answers a stream of values, over ${transport.name} request-reply`, () => replyStreamTests(transport));
}
