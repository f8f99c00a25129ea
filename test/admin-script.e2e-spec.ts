import amqplib from 'amqplib';
import { Queue } from 'bullmq';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createClient, type RedisClientType } from 'redis';
import { DataSource } from 'typeorm';
import { RABBITMQ_URL, rabbitMqAvailable, REDIS_URL, redisAvailable } from './support/brokers.js';
import { run } from './support/scratch-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const APPS = resolve('dist/test-apps/test/apps/admin-script');
const SCRIPT = `${APPS}/forget-key.main.js`;
const WORKER_CONTEXT = `${APPS}/worker-context.main.js`;
const LIBRARY_MIGRATIONS = [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000];
const suffix = `${process.pid}-${Date.now()}`;
const QUEUES = { WORKER_JOBS_QUEUE: `i27ops-admin-jobs-${suffix}`, WORKER_BULL_PREFIX: `i27ops-admin-${suffix}`, WORKER_RABBIT_QUEUE: `i27ops-admin-messages-${suffix}` };
const JOBS = 4;
const MESSAGES = 3;

const describeWithBrokers = (await redisAvailable()) && (await rabbitMqAvailable()) ? describe : describe.skip;

/**
 * An operator's incident script beside a worker's live queues (BullMQ on Redis, a golevelup
 * subscription on RabbitMQ), each a process of its own as in production: the script, built as the
 * guide says on IdempotencyAdminModule, opens the store and nothing else. Then an application
 * context of the worker's AppModule, what the guide used to advise, takes the same jobs and
 * messages: they were there to be consumed, and that is what such a context does.
 */
describeWithBrokers('an incident script on IdempotencyAdminModule, beside a worker\'s live queues', () => {
  let db: TestDatabase;
  const connection = createClient({ url: REDIS_URL }) as RedisClientType;
  const queue = new Queue(QUEUES.WORKER_JOBS_QUEUE, { connection, prefix: QUEUES.WORKER_BULL_PREFIX });
  let amqp: amqplib.ChannelModel;
  let channel: amqplib.Channel;
  let worker: ChildProcess | undefined;

  const env = () => ({ ...process.env, ...QUEUES, DATABASE_URL: db.url, REDIS_URL, RABBITMQ_URL, NO_COLOR: '1' });
  const count = async (sql: string, params: unknown[] = []) => (await db.query<{ n: number }>(sql, params))[0].n;
  const effects = () => count('SELECT count(*)::int AS n FROM worker_effects');
  const migrationsRun = () => count('SELECT count(*)::int AS n FROM migrations');
  const stored = (id: string) => count('SELECT count(*)::int AS n FROM processed_messages WHERE consumer = $1 AND message_id = $2', [QUEUES.WORKER_JOBS_QUEUE, id]);
  const queuedMessages = async () => (await channel.checkQueue(QUEUES.WORKER_RABBIT_QUEUE)).messageCount;

  beforeAll(async () => {
    for (const entry of [SCRIPT, WORKER_CONTEXT]) {
      if (!existsSync(entry)) {
        throw new Error(`${entry} is missing: run 'npm run build:test-apps' first ('npm test' does)`);
      }
    }
    db = await createTestDatabase();
    const dataSource = await new DataSource({ type: 'postgres', url: db.url, migrations: LIBRARY_MIGRATIONS, migrationsRun: true }).initialize();
    await dataSource.destroy();
    await db.query('CREATE TABLE worker_effects (source text NOT NULL, key text NOT NULL)');
    // What the operator works on: two jobs processed earlier, and a row expired and not purged yet.
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, expires_at) VALUES
         ($1, 'job-done-1', 'default', now() + interval '7 days'),
         ($1, 'job-done-2', 'default', now() + interval '6 days'),
         ($1, 'job-expired', 'default', now() - interval '1 day')`,
      [QUEUES.WORKER_JOBS_QUEUE],
    );
    amqp = await amqplib.connect(RABBITMQ_URL);
    channel = await amqp.createChannel();
    await channel.assertQueue(QUEUES.WORKER_RABBIT_QUEUE, { durable: false });
    for (let i = 0; i < JOBS; i++) {
      await queue.add('job', { id: `job-${i}` }, { jobId: `job-${i}` });
    }
    for (let i = 0; i < MESSAGES; i++) {
      channel.sendToQueue(QUEUES.WORKER_RABBIT_QUEUE, Buffer.from(JSON.stringify({ id: `message-${i}` })), { contentType: 'application/json' });
    }
    await until(async () => (await queuedMessages()) === MESSAGES, 'the messages are queued');
  });

  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((done) => worker!.once('exit', done));
      worker.kill('SIGKILL');
      await exited;
    }
    await channel?.deleteQueue(QUEUES.WORKER_RABBIT_QUEUE);
    await amqp?.close();
    await queue.obliterate({ force: true });
    await queue.close();
    if (connection.isOpen) {
      await connection.close();
    }
    await db?.drop();
  });

  it('looks up, lists and forgets against PostgreSQL, and leaves every job waiting, every message queued, the migrations and the purge unrun', async () => {
    const { stdout } = await run(process.execPath, [SCRIPT, QUEUES.WORKER_JOBS_QUEUE, 'job-done-2', '', 'INC-1: the job must run again'], {
      cwd: process.cwd(),
      timeout: 60_000,
      env: env(),
    });
    const printed = Object.assign({}, ...stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as object)) as {
      lookup: { state: string; messageId: string };
      list: { messageId: string }[];
      forget: { state: string; forgotten: boolean };
      purgeService: boolean;
    };
    expect(printed.lookup).toMatchObject({ state: 'processed', messageId: 'job-done-2' });
    expect(printed.list.map((record) => record.messageId).sort()).toEqual(['job-done-1', 'job-done-2', 'job-expired']);
    expect(printed.forget).toEqual({ state: 'processed', forgotten: true });
    expect(printed.purgeService).toBe(false);
    expect(stdout).toContain(`Admin forget of 'job-done-2' for ${QUEUES.WORKER_JOBS_QUEUE} by ops (reason: INC-1: the job must run again): forgotten (was processed).`);
    expect(await stored('job-done-2')).toBe(0);

    // The script has exited: whatever it started has stopped. Every job waits, every message is queued, nothing ran.
    expect(await queue.getWaitingCount()).toBe(JOBS);
    expect(await queuedMessages()).toBe(MESSAGES);
    expect(await effects()).toBe(0);
    expect(await migrationsRun()).toBe(LIBRARY_MIGRATIONS.length);
    expect(await stored('job-expired')).toBe(1);
  });

  it("whereas an application context of the worker's AppModule takes the jobs and the messages, runs its pending migration and purges", async () => {
    worker = spawn(process.execPath, [WORKER_CONTEXT], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    worker.stdout!.on('data', (chunk) => (output += chunk));
    worker.stderr!.on('data', (chunk) => (output += chunk));
    const alive = async () => {
      if (worker!.exitCode !== null) {
        throw new Error(`the worker context exited with ${worker!.exitCode}:\n${output}`);
      }
      return true;
    };
    await until(async () => (await alive()) && (await effects()) === JOBS + MESSAGES, 'the worker context consumed every job and message', 30_000);
    expect(await queue.getWaitingCount()).toBe(0);
    await until(async () => (await queuedMessages()) === 0, 'the messages are acked');
    expect(await migrationsRun()).toBe(LIBRARY_MIGRATIONS.length + 1);
    await until(async () => (await stored('job-expired')) === 0, 'the worker context purged the expired row');
  });
});
