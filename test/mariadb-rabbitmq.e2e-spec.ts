import amqplib from 'amqplib';
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { resolve } from 'node:path';
import { mariaDbSchemaSql } from 'nestjs-idempotent-consumer';
import { transportContract, type TransportHarness } from 'nestjs-idempotent-consumer/testing';
import { RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { createMariaDbDatabase, type MariaDbDatabase } from './support/mariadb-database.js';

/** The app, built by `npm run build:test-apps` (`npm test` does). */
const MARIADB_APP = resolve('dist/test-apps/test/apps/mariadb/mariadb-app.main.js');

const describeWithBroker = (await rabbitMqAvailable()) ? describe : describe.skip;

/**
 * The transport contract on RabbitMQ with the store on MariaDB (`Mysql2PoolDataLayer`): one message
 * published 50 times, a consumer SIGKILLed mid-handler, a 2 s outage of MariaDB, a poison message
 * and one without its key, the effects counted in MariaDB. The consumer is the MariaDB test app,
 * consuming as the demo does (its queue dead-letters to `<queue>.dead`).
 */
describeWithBroker('exactly-once RabbitMQ consumers with the store on MariaDB', () => {
  const queue = `credits-mariadb-e2e-${process.pid}-${Date.now()}`;
  const deadQueue = `${queue}.dead`;
  let mariadb: MariaDbDatabase;
  let db: Pool;
  let connection: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  const children: DemoProcess[] = [];

  beforeAll(async () => {
    mariadb = await createMariaDbDatabase('idempotency_rmq', [
      mariaDbSchemaSql(),
      'CREATE TABLE effects (id BIGINT AUTO_INCREMENT PRIMARY KEY, handler VARCHAR(32) NOT NULL, `key` VARCHAR(255) NOT NULL)',
      'CREATE TABLE credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(64) NOT NULL, cents INT NOT NULL)',
      'CREATE TABLE gates (name VARCHAR(255) PRIMARY KEY)',
    ]);
    db = mariadb.pool;
    connection = await amqplib.connect(RABBITMQ_URL);
    channel = await connection.createConfirmChannel();
  });

  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.kill('SIGKILL')));
    await channel.purgeQueue(queue).catch(() => undefined);
    await channel.purgeQueue(deadQueue).catch(() => undefined);
  });

  afterAll(async () => {
    await channel?.deleteQueue(queue);
    await channel?.deleteQueue(deadQueue);
    await connection?.close();
    await mariadb?.drop();
  });

  async function publish(pattern: string, data: unknown, messageId?: string): Promise<void> {
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern, data })), { messageId, persistent: true });
    await channel.waitForConfirms();
  }

  const ready = async (name = queue) => (await channel.checkQueue(name)).messageCount;
  /** `sql` with its `$1`, `$2`... placeholders as mysql2's `?`, the values in the order they stand. */
  const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => {
    const values: unknown[] = [];
    const text = sql.replace(/\$(\d+)/g, (_, index: string) => {
      values.push(params[Number(index) - 1]);
      return '?';
    });
    return (await db.query<RowDataPacket[]>(text, values))[0] as T[];
  };
  const count = async (sql: string, params: unknown[] = []) => Number((await query<{ n: string | number }>(sql, params))[0].n);

  const harness: TransportHarness = {
    async start({ databaseUrl = mariadb.url } = {}) {
      const child = await startAppProcess(MARIADB_APP, { MARIADB_URL: databaseUrl, RABBITMQ_URL, RABBITMQ_QUEUE: queue }, '/ready');
      children.push(child);
      return { logs: () => child.output().split('\n'), stop: () => child.kill('SIGTERM'), kill: () => child.kill('SIGKILL') };
    },
    publish: ({ key }) => publish('credit.grant', { account: key }, key),
    async publishCopies({ key }, copies) {
      for (let i = 0; i < copies; i++) {
        await publish('credit.grant', { account: key }, key);
      }
    },
    publishPoison: ({ key }) => publish('fixture.poison', { id: key }, key),
    publishWithoutKey: ({ key }) => publish('credit.grant', { account: key }),
    effects: ({ key }) => count('SELECT count(*) AS n FROM effects WHERE `key` = $1', [key]),
    async block({ key }) {
      await db.query('INSERT INTO gates (name) VALUES (?)', [key]);
      const holder: PoolConnection = await db.getConnection();
      await holder.query('START TRANSACTION');
      await holder.query('SELECT name FROM gates WHERE name = ? FOR UPDATE', [key]);
      return async () => {
        await holder.query('ROLLBACK');
        holder.release();
      };
    },
    blocked: async () => (await count(`SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE DB = $1 AND INFO LIKE 'SELECT name FROM gates%'`, [mariadb.name])) === 1,
    drained: async () => (await ready()) === 0,
    deadLettered: () => ready(deadQueue),
    query,
    get databaseUrl() {
      return mariadb.url;
    },
    poisonAttempts: 3,
    missingKey: 'the AMQP messageId property is missing',
    also: {
      async poison({ key }, consumer) {
        expect(await count(`SELECT count(*) AS n FROM effects WHERE handler = 'poison' AND \`key\` = $1`, [key])).toBe(0);
        expect(consumer.logs().some((line) => line.includes('dead-letter') && line.includes('failed 3 times'))).toBe(true);
      },
      missingKey: async (_, consumer) => expect(consumer.logs().some((line) => line.includes('dead-letter') && line.includes('the AMQP messageId property is missing'))).toBe(true),
    },
  };

  describe('the transport contract', () => {
    for (const { name, run } of transportContract(harness)) {
      it(name, run);
    }
  });
});
