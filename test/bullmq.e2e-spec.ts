import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type JobsOptions, Queue } from 'bullmq';
import { IdempotencyOptionsError, IdempotencyUnsupportedHandlerError } from 'nestjs-idempotent-consumer';
import { resolve } from 'node:path';
import { createClient, type RedisClientType } from 'redis';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { BullmqFixtureModule, type CreditJob, PoisonJobsProcessor, RequestScopedProcessor, UnstalledJobsProcessor } from './fixtures/bullmq-fixture.module.js';
import { REDIS_URL, redisAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { handlerBlocked, lockAccount } from './support/account-lock.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const BULLMQ_APP = resolve('dist/test-apps/test/apps/bullmq/bullmq-app.main.js');

const describeWithBroker = (await redisAvailable()) ? describe : describe.skip;

describeWithBroker('exactly-once BullMQ processors', () => {
  const prefix = `bullmq-e2e-${process.pid}-${Date.now()}`;
  /** BullMQ takes node-redis clients (its own options need ioredis) and leaves them open for their owner to close. */
  const redisClient = () => createClient({ url: REDIS_URL }) as RedisClientType;
  const connection = redisClient();
  const queues = Object.fromEntries(['credits', 'numbered', 'orders', 'poison'].map((name) => [name, new Queue(name, { connection, prefix })])) as Record<
    'credits' | 'numbered' | 'orders' | 'poison',
    Queue
  >;
  let db: TestDatabase;
  let app: INestApplication | undefined;
  let appConnection: RedisClientType | undefined;
  let logger: CapturingLogger;
  const children: DemoProcess[] = [];

  async function startWorkers(databaseUrl = db.url): Promise<INestApplication> {
    logger = new CapturingLogger();
    appConnection = redisClient();
    ({ app } = await startDemoApp('express', databaseUrl, [BullmqFixtureModule.register(appConnection, prefix)], logger, { purge: { interval: false } }));
    return app;
  }

  async function stopWorkers(): Promise<void> {
    await app?.close();
    app = undefined;
    await closeClient(appConnection);
    appConnection = undefined;
  }

  async function closeClient(client: RedisClientType | undefined): Promise<void> {
    if (client?.isOpen) {
      await client.close();
    }
  }

  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const ledgerRows = (account: string) => count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]);
  const balanceOf = async (account: string) => (await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]))[0]?.balance;
  const claims = (key: string) => count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [key]);
  const stateOf = async (queue: Queue, jobId: string) => (await queue.getJob(jobId))?.getState();
  const settled = (queue: Queue, jobId: string) => async () => ['completed', 'failed'].includes((await stateOf(queue, jobId)) ?? '');

  beforeAll(async () => {
    db = await createTestDatabase();
    // The demo's migrations create the credit tables; start it once to run them.
    const { app: migrator } = await startDemoApp('express', db.url);
    await migrator.close();
    await db.query(FIXTURE_TABLES_SQL);
  });

  afterEach(async () => {
    await stopWorkers();
    await Promise.all(children.splice(0).map((child) => child.kill('SIGKILL')));
  });

  afterAll(async () => {
    for (const queue of Object.values(queues)) {
      await queue.obliterate({ force: true });
      await queue.close();
    }
    await closeClient(connection);
    await db?.drop();
  });

  it('50 jobs with distinct ids and one payload key, 10 at a time → one effect; the other 49 complete as duplicates', async () => {
    await startWorkers();
    const jobs = await queues.orders.addBulk(
      Array.from({ length: 50 }, (_, i) => ({ name: 'credit', data: { account: 'acc-fifty', cents: 25, orderId: 'order-fifty' }, opts: { jobId: `fifty-${i}` } })),
    );
    await until(async () => (await queues.orders.getJobCounts('completed')).completed === 50, 'all 50 jobs complete', 30_000);
    const replies = await Promise.all(jobs.map(async (job) => (await queues.orders.getJob(job.id!))!.returnvalue as { balance: number }));
    const duplicatesLogged = logger.lines.filter((line) => line.includes("Duplicate of 'order-fifty'")).length;
    console.log(`50 jobs, one payload key: ${await ledgerRows('acc-fifty')} effect, ${duplicatesLogged} duplicates, replies ${JSON.stringify([...new Set(replies.map((reply) => reply.balance))])}`);
    expect(await ledgerRows('acc-fifty')).toBe(1);
    expect(await balanceOf('acc-fifty')).toBe('25');
    expect(duplicatesLogged).toBe(49);
    expect(replies.every((reply) => reply.balance === 25)).toBe(true);
    expect((await queues.orders.getJobCounts('failed')).failed).toBe(0);
    expect(await db.query(`SELECT consumer FROM processed_messages WHERE message_id = 'order-fifty'`)).toEqual([{ consumer: 'bullmq orders' }]);
  });

  it('a custom jobId added again after BullMQ removed the completed job → completes as a duplicate without running', async () => {
    await startWorkers();
    const options: JobsOptions = { jobId: 'custom-1', removeOnComplete: true };
    await queues.credits.add('credit', { account: 'acc-custom', cents: 5 } satisfies CreditJob, options);
    await until(async () => (await ledgerRows('acc-custom')) === 1 && (await queues.credits.getJob('custom-1')) === undefined, 'the first job is done and removed');
    await queues.credits.add('credit', { account: 'acc-custom', cents: 5 } satisfies CreditJob, options);
    await until(() => Promise.resolve(logger.lines.some((line) => line.includes("Duplicate of 'custom-1'"))), 'the second job is answered as a duplicate');
    await until(async () => (await queues.credits.getJob('custom-1')) === undefined, 'the second job completes and is removed');
    expect(await ledgerRows('acc-custom')).toBe(1);
    expect(await balanceOf('acc-custom')).toBe('5');
    expect(await db.query(`SELECT consumer FROM processed_messages WHERE message_id = 'custom-1'`)).toEqual([{ consumer: 'bullmq credits' }]);
  });

  it("a worker SIGKILLed mid-job: BullMQ's stalled-job check hands the job to another worker, and the effect happens once", async () => {
    const account = 'acc-sigkill';
    const first = await startAppProcess(BULLMQ_APP, { DATABASE_URL: db.url, REDIS_URL, BULLMQ_PREFIX: prefix }, '/accounts/ping');
    children.push(first);
    await queues.credits.add('credit', { account, cents: 100 } satisfies CreditJob, { jobId: 'seed-sigkill' });
    await until(async () => (await ledgerRows(account)) === 1, 'the seed credit is processed');

    const holder = await lockAccount(db, account);
    await queues.credits.add('credit', { account, cents: 7 } satisfies CreditJob, { jobId: 'crash-1' });
    await until(() => handlerBlocked(db), 'the handler waits on the account lock inside its claim transaction');
    expect(await stateOf(queues.credits, 'crash-1')).toBe('active');
    await first.kill('SIGKILL');
    await holder.query('ROLLBACK');
    await holder.end();
    expect(await ledgerRows(account)).toBe(1);

    await startWorkers();
    await until(settled(queues.credits, 'crash-1'), 'the stalled job is taken over and settled', 30_000);
    const job = (await queues.credits.getJob('crash-1'))!;
    console.log(`SIGKILL mid-job: state ${await job.getState()}, started ${job.attemptsStarted} times, stalled ${job.stalledCounter} time(s)`);
    expect(await job.getState()).toBe('completed');
    expect(job.stalledCounter).toBe(1);
    expect(await ledgerRows(account)).toBe(2);
    expect(await balanceOf(account)).toBe('107');
    expect(await claims('crash-1')).toBe(1);
  });

  it('a 2-second database outage: jobs fail, BullMQ backs them off and retries, nothing fails for good, each job has one effect', async () => {
    const database = new URL(db.url);
    const proxy = new TcpProxy(database.hostname, Number(database.port || 5432));
    await proxy.start();
    try {
      await startWorkers(proxy.url(db.url));
      const account = 'acc-outage';
      proxy.refuse();
      const outage = performance.now();
      await queues.credits.addBulk(
        Array.from({ length: 20 }, (_, i) => ({
          name: 'credit',
          data: { account, cents: 1 } satisfies CreditJob,
          opts: { jobId: `outage-${i}`, attempts: 10, backoff: { type: 'exponential', delay: 200 } },
        })),
      );
      await until(async () => (await queues.credits.getJobCounts('delayed')).delayed > 0, 'jobs fail and are delayed for a retry');
      await until(() => Promise.resolve(performance.now() - outage >= 2_000), 'the outage has lasted 2 s');
      proxy.accept();
      await until(async () => (await ledgerRows(account)) === 20 && (await queues.credits.getJobCounts('completed')).completed >= 20, 'every job is processed after the outage', 60_000);
      const jobs = await Promise.all(Array.from({ length: 20 }, (_, i) => queues.credits.getJob(`outage-${i}`)));
      const attempts = jobs.map((job) => job!.attemptsMade);
      console.log(`2 s outage: 20 jobs, attempts made ${Math.min(...attempts)}..${Math.max(...attempts)} (sum ${attempts.reduce((a, b) => a + b)}); failed for good: ${(await queues.credits.getJobCounts('failed')).failed}`);
      expect((await queues.credits.getJobCounts('failed')).failed).toBe(0);
      // Each failed attempt has the module's line, naming its job.
      expect(logger.lines).toContainEqual(
        expect.stringMatching(/^WARN bullmq message 'outage-\d+' for 'bullmq credits' failed \(attempt 1 of 10\) and is left to the job's attempts and backoff: The database could not be reached/),
      );
      expect(Math.max(...attempts)).toBeGreaterThan(1);
      expect(await ledgerRows(account)).toBe(20);
      expect(await balanceOf(account)).toBe('20');
    } finally {
      await stopWorkers();
      await proxy.close();
    }
  });

  it("a poison job fails after the job's attempts, with nothing committed", async () => {
    await startWorkers();
    await queues.poison.add('poison', { id: 'poison-1' }, { jobId: 'poison-1', attempts: 3, backoff: { type: 'fixed', delay: 100 } });
    await until(settled(queues.poison, 'poison-1'), 'the job settles');
    const job = (await queues.poison.getJob('poison-1'))!;
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(3);
    expect(job.failedReason).toBe('poison job poison-1 always fails');
    expect(app!.get(PoisonJobsProcessor).attempts).toBe(3);
    expect(await count(`SELECT count(*) AS n FROM effects WHERE key = 'poison-1'`)).toBe(0);
    expect(await claims('poison-1')).toBe(0);
    const cause = 'poison job poison-1 always fails';
    expect(logger.lines).toContainEqual(`WARN bullmq message 'poison-1' for 'bullmq poison' failed (attempt 1 of 3) and is left to the job's attempts and backoff: ${cause}`);
    expect(logger.lines).toContainEqual(`WARN bullmq message 'poison-1' for 'bullmq poison' failed (attempt 2 of 3) and is left to the job's attempts and backoff: ${cause}`);
    expect(logger.lines).toContainEqual(`ERROR bullmq message 'poison-1' for 'bullmq poison' failed for good: it failed 3 times; last error: ${cause}`);
  });

  it('a job without its key fails at once, whatever attempts it has left, without running the handler', async () => {
    await startWorkers();
    await queues.orders.add('credit', { account: 'acc-no-key', cents: 5 } satisfies CreditJob, { jobId: 'no-key-1', attempts: 5 });
    await until(settled(queues.orders, 'no-key-1'), 'the job settles');
    const job = (await queues.orders.getJob('no-key-1'))!;
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toContain("'orderId' in the message payload");
    expect(await ledgerRows('acc-no-key')).toBe(0);
    expect(logger.lines).toContainEqual(expect.stringMatching(/^ERROR bullmq message 'no-key-1' for 'bullmq orders' failed for good, without further attempts \(attempt 1 of 5\)/));
  });

  it('a payload key reused with another payload fails at once, and the first effect stands alone', async () => {
    await startWorkers();
    await queues.orders.add('credit', { account: 'acc-reused', cents: 5, orderId: 'order-reused' } satisfies CreditJob, { jobId: 'reused-1' });
    await until(settled(queues.orders, 'reused-1'), 'the first job settles');
    await queues.orders.add('credit', { account: 'acc-reused', cents: 500, orderId: 'order-reused' } satisfies CreditJob, { jobId: 'reused-2', attempts: 5 });
    await until(settled(queues.orders, 'reused-2'), 'the second job settles');
    const second = (await queues.orders.getJob('reused-2'))!;
    expect(await stateOf(queues.orders, 'reused-1')).toBe('completed');
    expect(await second.getState()).toBe('failed');
    expect(second.attemptsMade).toBe(1);
    expect(await ledgerRows('acc-reused')).toBe(1);
    expect(await balanceOf('acc-reused')).toBe('5');
  });

  it('jobs without a jobId, the queue obliterated, new jobs numbered from 1 again → each new job has its effect', async () => {
    await startWorkers();
    const account = 'acc-numbered';
    const addThree = () => queues.numbered.addBulk(Array.from({ length: 3 }, () => ({ name: 'credit', data: { account, cents: 1 } satisfies CreditJob })));
    const first = await addThree();
    await until(async () => (await queues.numbered.getJobCounts('completed')).completed === 3, 'the first three jobs complete');
    await queues.numbered.obliterate({ force: true });
    const second = await addThree();
    await until(async () => (await queues.numbered.getJobCounts('completed')).completed === 3, 'the three new jobs complete');
    console.log(`numbered jobs: ids ${first.map((job) => job.id).join(',')}, after obliterate ${second.map((job) => job.id).join(',')}; effects ${await ledgerRows(account)}`);
    expect(second.map((job) => job.id)).toEqual(first.map((job) => job.id));
    expect(logger.lines.filter((line) => line.includes('Duplicate of'))).toEqual([]);
    expect(await ledgerRows(account)).toBe(6);
    expect(await balanceOf(account)).toBe('6');
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'bullmq numbered'`)).toBe(6);
  });

  it("warns at start-up of each idempotent processor's queue that gives its jobs a single attempt, naming the queue and the fix", async () => {
    await startWorkers();
    const warnings = logger.lines.filter((line) => line.startsWith('WARN Jobs of BullMQ queue'));
    expect(warnings.map((line) => /queue '(\w+)'/.exec(line)![1]).sort()).toEqual(['credits', 'numbered', 'poison']);
    expect(warnings).toContainEqual(
      expect.stringMatching(/^WARN Jobs of BullMQ queue 'credits' \(processed by CreditJobsProcessor\.process\) get one attempt .*defaultJobOptions: \{ attempts: 8.*when it is added\.$/),
    );
    // The orders queue sets defaultJobOptions.attempts: no warning for it.
    expect(logger.lines.filter((line) => line.includes("queue 'orders'"))).toEqual([]);
  });

  it('refuses to start a processor whose worker fails stalled jobs (maxStalledCount: 0), naming it, its queue and the fix', async () => {
    const refusedConnection = redisClient();
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({ databaseUrl: db.url, idempotency: { purge: { interval: false } } }),
        BullmqFixtureModule.register(refusedConnection, prefix, [UnstalledJobsProcessor]),
      ],
    }).compile();
    const refused = moduleRef.createNestApplication({ logger: false });
    try {
      const init = refused.init();
      await expect(init).rejects.toThrow(IdempotencyOptionsError);
      await expect(init).rejects.toThrow(/^UnstalledJobsProcessor\.process is idempotent, but its BullMQ worker of queue 'unstalled' has maxStalledCount: 0: .* set it to 1 or more\.$/);
    } finally {
      await refused.close();
      await closeClient(refusedConnection);
    }
  });

  it('refuses to start with a request-scoped processor, whose per-job instances the module cannot enlist', async () => {
    const scopedConnection = redisClient();
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({ databaseUrl: db.url, idempotency: { purge: { interval: false } } }),
        BullmqFixtureModule.register(scopedConnection, prefix, [RequestScopedProcessor]),
      ],
    }).compile();
    const refused = moduleRef.createNestApplication({ logger: false });
    try {
      const refusal: unknown = await refused.init().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(IdempotencyUnsupportedHandlerError);
      expect((refusal as Error).message).toMatch(/^RequestScopedProcessor\.process .*request-scoped/);
    } finally {
      await refused.close();
      await closeClient(scopedConnection);
    }
  });
});
