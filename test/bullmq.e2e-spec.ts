import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type JobsOptions, Queue } from 'bullmq';
import { IdempotencyOptionsError, IdempotencyUnsupportedHandlerError } from 'nestjs-idempotent-consumer';
import { type ContractConsumer, type TransportHarness, transportContract } from 'nestjs-idempotent-consumer/testing';
import { resolve } from 'node:path';
import { createClient, type RedisClientType } from 'redis';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { BullmqFixtureModule, type CreditJob, PoisonJobsProcessor, RequestScopedProcessor, UnstalledJobsProcessor } from './fixtures/bullmq-fixture.module.js';
import { REDIS_URL, redisAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { lockAccount } from './support/account-lock.js';
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

  /** The credits a harness message grants: one of its account, `cents` each. */
  const CENTS = 7;
  /** The BullMQ jobs of each contract message: their queue and ids. */
  const jobsOf = new Map<string, { readonly queue: Queue; readonly ids: string[] }>();
  async function addJobs(key: string, queue: Queue, jobs: { data: object; opts: JobsOptions & { jobId: string } }[]): Promise<void> {
    jobsOf.set(key, { queue, ids: jobs.map(({ opts }) => opts.jobId) });
    await queue.addBulk(jobs.map(({ data, opts }) => ({ name: 'credit', data, opts })));
  }
  const jobs = async (key: string) => {
    const { queue, ids } = jobsOf.get(key)!;
    return Promise.all(ids.map(async (id) => (await queue.getJob(id))!));
  };
  /** The workers' application as the harness last started it in this process: what its poison processor counted stays readable after it stopped. */
  let lastWorkers: INestApplication;
  const inProcess = (): ContractConsumer => {
    const lines = logger.lines;
    lastWorkers = app!;
    return { logs: () => lines, stop: stopWorkers, kill: () => Promise.reject(new Error('an in-process worker cannot be killed')) };
  };

  /**
   * Credits keyed by the job id on the `credits` queue (10 attempts, exponential backoff: the outage
   * check's jobs outlast it), by `orderId` on the `orders` queue for copies and keyless jobs, and
   * the `poison` queue's processor, whose jobs get 3 attempts.
   */
  const harness: TransportHarness = {
    async start({ databaseUrl, crashable } = {}) {
      if (!crashable) {
        await startWorkers(databaseUrl);
        return inProcess();
      }
      const worker = await startAppProcess(BULLMQ_APP, { DATABASE_URL: databaseUrl ?? db.url, REDIS_URL, BULLMQ_PREFIX: prefix }, '/accounts/ping');
      children.push(worker);
      return { logs: () => worker.output().split('\n'), stop: () => worker.kill('SIGTERM'), kill: () => worker.kill('SIGKILL') };
    },
    publish: ({ key }) =>
      addJobs(key, queues.credits, [{ data: { account: key, cents: CENTS } satisfies CreditJob, opts: { jobId: key, attempts: 10, backoff: { type: 'exponential', delay: 200 } } }]),
    publishCopies: ({ key }, copies) =>
      addJobs(
        key,
        queues.orders,
        Array.from({ length: copies }, (_, i) => ({ data: { account: key, cents: CENTS, orderId: key } satisfies CreditJob, opts: { jobId: `${key}-${i}` } })),
      ),
    publishPoison: ({ key }) => addJobs(key, queues.poison, [{ data: { id: key }, opts: { jobId: key, attempts: 3, backoff: { type: 'fixed', delay: 100 } } }]),
    publishWithoutKey: ({ key }) => addJobs(key, queues.orders, [{ data: { account: key, cents: CENTS } satisfies CreditJob, opts: { jobId: key, attempts: 5 } }]),
    effects: async ({ key }) => (await ledgerRows(key)) + (await count('SELECT count(*) AS n FROM effects WHERE key = $1', [key])),
    async block({ key }) {
      await db.query('INSERT INTO accounts (account, balance) VALUES ($1, 100)', [key]);
      const holder = await lockAccount(db, key);
      return async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      };
    },
    async drained() {
      for (const queue of Object.values(queues)) {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
        if (Object.values(counts).some((n) => n > 0)) {
          return false;
        }
      }
      return true;
    },
    deadLettered: async ({ key }) => (await Promise.all((await jobs(key)).map((job) => job.getState()))).filter((state) => state === 'failed').length,
    query: (sql, params) => db.query(sql, params),
    get databaseUrl() {
      return db.url;
    },
    poisonAttempts: 3,
    missingKey: "'orderId' in the message payload is missing",
    also: {
      async fiftyCopies({ key }) {
        const replies = (await jobs(key)).map((job) => job.returnvalue as { balance: number });
        console.log(`50 jobs, one payload key: replies ${JSON.stringify([...new Set(replies.map((reply) => reply.balance))])}`);
        expect(replies.every((reply) => reply.balance === CENTS)).toBe(true);
        expect(await balanceOf(key)).toBe(String(CENTS));
        expect(await db.query('SELECT consumer FROM processed_messages WHERE message_id = $1', [key])).toEqual([{ consumer: 'bullmq orders' }]);
      },
      beforeKill: async ({ key }) => expect(await stateOf(queues.credits, key)).toBe('active'),
      async killedMidHandler({ key }) {
        const [job] = await jobs(key);
        console.log(`SIGKILL mid-job: state ${await job.getState()}, started ${job.attemptsStarted} times, stalled ${job.stalledCounter} time(s)`);
        expect(await job.getState()).toBe('completed');
        expect(job.stalledCounter).toBe(1);
        expect(await balanceOf(key)).toBe(String(100 + CENTS));
      },
      async databaseOutage(messages, consumer) {
        const attempts = (await Promise.all(messages.map(async ({ key }) => (await jobs(key))[0]))).map((job) => job.attemptsMade);
        console.log(`2 s outage: 20 jobs, attempts made ${Math.min(...attempts)}..${Math.max(...attempts)} (sum ${attempts.reduce((a, b) => a + b)})`);
        // Each failed attempt has the module's line, naming its job.
        expect(consumer.logs()).toContainEqual(
          expect.stringMatching(/^WARN bullmq message '.+' for 'bullmq credits' failed \(attempt 1 of 10\) and is left to the job's attempts and backoff: The database could not be reached/),
        );
        expect(Math.max(...attempts)).toBeGreaterThan(1);
        for (const { key } of messages) {
          expect([key, await balanceOf(key)]).toEqual([key, String(CENTS)]);
        }
      },
      async poison({ key }, consumer) {
        const [job] = await jobs(key);
        expect(job.attemptsMade).toBe(3);
        expect(job.failedReason).toBe(`poison job ${key} always fails`);
        expect(lastWorkers.get(PoisonJobsProcessor).attempts).toBe(3);
        const cause = `poison job ${key} always fails`;
        expect(consumer.logs()).toContainEqual(`WARN bullmq message '${key}' for 'bullmq poison' failed (attempt 1 of 3) and is left to the job's attempts and backoff: ${cause}`);
        expect(consumer.logs()).toContainEqual(`WARN bullmq message '${key}' for 'bullmq poison' failed (attempt 2 of 3) and is left to the job's attempts and backoff: ${cause}`);
        expect(consumer.logs()).toContainEqual(`ERROR bullmq message '${key}' for 'bullmq poison' failed for good: it failed 3 times; last error: ${cause}`);
      },
      async missingKey({ key }, consumer) {
        const [job] = await jobs(key);
        expect(job.attemptsMade).toBe(1);
        expect(job.failedReason).toContain("'orderId' in the message payload");
        expect(consumer.logs()).toContainEqual(expect.stringMatching(new RegExp(`^ERROR bullmq message '${key}' for 'bullmq orders' failed for good, without further attempts \\(attempt 1 of 5\\)`)));
      },
    },
  };

  describe('the transport contract', () => {
    for (const check of transportContract(harness)) {
      it(check.name, check.run);
    }
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
