import { Body, Controller, type INestApplication, Module, Post } from '@nestjs/common';
import {
  IdempotencyContext,
  IdempotencyHealthIndicator,
  IdempotencyMetricsService,
  IdempotencyPurgeService,
  IdempotentHandler,
  Outbox,
  schemaSql,
} from 'nestjs-idempotent-consumer';
import { post, startDemoApp } from './support/demo-app.js';
import { measureUntil } from './support/latency.js';
import { PGBOUNCER_POOL_SIZE, type PgBouncer, pgBouncerAvailable, startPgBouncer } from './support/pgbouncer.js';
import { countProcessedMessages, seedProcessedMessages } from './support/processed-messages.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const describeWithPgBouncer = pgBouncerAvailable() ? describe : describe.skip;

const BATCH_SIZE = 5000;
const UNEXPIRED = 10_000;
/** The demo's connections name themselves, so that PgBouncer's server connections can be told apart on PostgreSQL. */
const APPLICATION = 'demo-behind-pgbouncer';

describeWithPgBouncer('behind PgBouncer in transaction pooling mode', () => {
  let db: TestDatabase;
  let bouncer: PgBouncer;
  let app: INestApplication;
  let baseUrl: string;
  let credits = 0;

  const ledgerRows = async (account: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]))[0].n);

  /** Advisory locks of the purge held or awaited in this database, read on PostgreSQL itself. */
  const purgeLocks = () =>
    db.query<{ pid: number; granted: boolean }>(
      `SELECT pid, granted FROM pg_locks
       WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND classid = hashtext('idempotency.purge')::oid AND objid = hashtext('processed_messages')::oid AND objsubid = 2`,
    );

  /** One new credit with a new key; fails the test unless it is processed (201). */
  async function credit(): Promise<void> {
    const key = `load-${++credits}`;
    const answer = await post(`${baseUrl}/credits`, { account: `acc-load-${credits % 8}`, cents: 1 }, { 'Idempotency-Key': key });
    if (answer.status !== 201 || answer.headers.get('idempotent-replayed') !== null) {
      throw new Error(`credit ${key} answered ${answer.status}: ${JSON.stringify(answer.body)}\n${bouncer.log()}`);
    }
  }

  /** `count` new credits, `concurrency` at a time. */
  async function grantCredits(count: number, concurrency: number): Promise<void> {
    const target = credits + count;
    await measureUntil(credit, () => credits >= target, concurrency);
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    bouncer = await startPgBouncer(db.url);
    // The demo's migrations run through PgBouncer too: TypeORM's migration run needs no session
    // state (it takes no advisory lock, and runs the migrations in one transaction).
    ({ app, baseUrl } = await startDemoApp('express', `${bouncer.url}?application_name=${APPLICATION}`, [], false, {
      purge: { interval: false, batchSize: BATCH_SIZE },
    }));
    await seedProcessedMessages(db, { count: UNEXPIRED, consumer: 'Bouncer.unexpired', expired: false });
  });

  afterAll(async () => {
    await app?.close();
    await bouncer?.stop();
    await db?.drop();
  });

  it('serves the demo’s connections on a few server connections of PgBouncer’s pool', async () => {
    await grantCredits(40, 10);
    const [{ servers }] = await db.query<{ servers: string }>(
      `SELECT count(*) AS servers FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
      [APPLICATION],
    );
    expect(Number(servers)).toBeGreaterThan(1);
    expect(Number(servers)).toBeLessThanOrEqual(PGBOUNCER_POOL_SIZE);
  });

  it('the health indicator and GET /health are up, with the store’s figures', async () => {
    await db.query('ANALYZE processed_messages');
    const [{ rows }] = await db.query<{ rows: string }>('SELECT count(*) AS rows FROM processed_messages');
    const result = await app.get(IdempotencyHealthIndicator).isHealthy();
    expect(result.idempotency).toMatchObject({
      status: 'up',
      store: { estimatedRows: Number(rows), totalBytes: expect.any(Number) },
      purge: { lagSeconds: 0 },
    });
    const response = await fetch(`${baseUrl}/health`);
    const body = (await response.json()) as { status: string; details: Record<string, { status: string }> };
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ status: 'ok', details: { database: { status: 'up' }, idempotency: { status: 'up' } } });
    console.log(`pgbouncer e2e: health through PgBouncer ${JSON.stringify(result.idempotency)}`);
  });

  it('a key redelivered 5 times → one ledger row and identical replays', async () => {
    const answers = [];
    for (let i = 0; i < 5; i++) {
      answers.push(await post(`${baseUrl}/credits`, { account: 'acc-bouncer-1', cents: 700 }, { 'Idempotency-Key': 'bouncer-once' }));
    }
    expect(answers[0]).toMatchObject({ status: 201, body: { account: 'acc-bouncer-1', cents: 700, balance: 700 } });
    expect(answers[0].headers.get('idempotent-replayed')).toBeNull();
    for (const replay of answers.slice(1)) {
      expect(replay.status).toBe(201);
      expect(replay.body).toEqual(answers[0].body);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(await ledgerRows('acc-bouncer-1')).toBe(1);
    const [{ balance }] = await db.query<{ balance: string }>(`SELECT balance FROM accounts WHERE account = 'acc-bouncer-1'`);
    expect(Number(balance)).toBe(700);
  });

  it('50 concurrent duplicates → one effect', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(`${baseUrl}/credits`, { account: 'acc-bouncer-50', cents: 5 }, { 'Idempotency-Key': 'bouncer-50' })),
    );
    const firsts = answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null);
    expect(firsts).toHaveLength(1);
    for (const answer of answers) {
      expect([201, 409]).toContain(answer.status);
    }
    expect(await ledgerRows('acc-bouncer-50')).toBe(1);
    const replayed = answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true').length;
    console.log(`pgbouncer e2e: 50 concurrent duplicates: 1 processed, ${replayed} replayed, ${answers.length - 1 - replayed} answered 409`);
    const replay = await post(`${baseUrl}/credits`, { account: 'acc-bouncer-50', cents: 5 }, { 'Idempotency-Key': 'bouncer-50' });
    expect(replay).toMatchObject({ status: 201, body: firsts[0].body });
    expect(await ledgerRows('acc-bouncer-50')).toBe(1);
  });

  it('purges one run after another with credits in between: each run purges, none skips, no lock stays', async () => {
    const purge = app.get(IdempotencyPurgeService);
    for (let round = 1; round <= 5; round++) {
      const consumer = `Bouncer.round-${round}`;
      await seedProcessedMessages(db, { count: 3 * BATCH_SIZE + 100, consumer, expired: true });
      await grantCredits(40, 8);
      const run = await purge.purgeNow();
      expect({ round, ...run }).toMatchObject({ round, outcome: 'purged', rows: 3 * BATCH_SIZE + 100 });
      expect(await countProcessedMessages(db, consumer)).toBe(0);
      expect(await countProcessedMessages(db, 'Bouncer.unexpired')).toBe(UNEXPIRED);
      expect(await purgeLocks()).toEqual([]);
    }
    expect(app.get(IdempotencyMetricsService).purge().runs).toEqual({ purged: 5, skipped: 0, failed: 0 });
  });

  it('a purge PgBouncer spreads over several busy server connections leaves no lock behind', async () => {
    const purge = app.get(IdempotencyPurgeService);
    await seedProcessedMessages(db, { count: 12 * BATCH_SIZE, consumer: 'Bouncer.spread', expired: true });
    let finished = false;
    const servers = new Set<number>();
    const running = purge.purgeNow().finally(() => (finished = true));
    await Promise.all([
      measureUntil(credit, () => finished, 8),
      until(async () => {
        const batches = await db.query<{ pid: number }>(
          // A server connection's last statement stays in pg_stat_activity once it is idle again.
          `SELECT pid FROM pg_stat_activity
           WHERE datname = current_database() AND application_name = $1 AND query LIKE '%idempotency.purge%'`,
          [APPLICATION],
        );
        batches.forEach(({ pid }) => servers.add(pid));
        return finished;
      }, 'the purge ends', 60_000),
    ]);
    const run = await running;
    expect(run).toMatchObject({ outcome: 'purged', rows: 12 * BATCH_SIZE });
    expect(servers.size).toBeGreaterThan(1);
    expect(await countProcessedMessages(db, 'Bouncer.spread')).toBe(0);
    expect(await purgeLocks()).toEqual([]);

    await seedProcessedMessages(db, { count: 100, consumer: 'Bouncer.after', expired: true });
    expect(await purge.purgeNow()).toMatchObject({ outcome: 'purged', rows: 100 });
    expect(await countProcessedMessages(db, 'Bouncer.unexpired')).toBe(UNEXPIRED);
    console.log(`pgbouncer e2e: a purge of ${run.rows} rows in ${run.batches} batches ran on ${servers.size} server connections`);
  });
});

/** The broker of the outbox block: it keeps the ids the relay sent it, in order. */
const sentThroughBouncer: string[] = [];

@Controller('bounced-grants')
class BouncedGrantsController {
  constructor(
    private readonly outbox: Outbox,
    private readonly idempotency: IdempotencyContext,
  ) {}

  @Post()
  @IdempotentHandler()
  async grant(@Body() body: { id: string; account: string; fail?: boolean }) {
    await this.idempotency.manager.query('INSERT INTO ledger_entries (account, cents) VALUES ($1, 1)', [body.account]);
    await this.outbox.publish({ to: 'recorder', address: 'grants', payload: body, id: body.id, orderingKey: body.account });
    if (body.fail) {
      throw new Error('the handler fails after publishing');
    }
    return { id: body.id };
  }
}

@Module({ controllers: [BouncedGrantsController] })
class BouncedGrantsModule {}

describeWithPgBouncer('the outbox behind PgBouncer in transaction pooling mode (relay polling, listen: false)', () => {
  let db: TestDatabase;
  let bouncer: PgBouncer;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query((await schemaSql()).find((migration) => migration.name.endsWith('create-outbox-messages-table'))!.sql);
    bouncer = await startPgBouncer(db.url);
    ({ app, baseUrl } = await startDemoApp('express', bouncer.url, [BouncedGrantsModule], false, {
      purge: { interval: false },
      outbox: { publishers: { recorder: { publish: async (message) => void sentThroughBouncer.push(message.id) } }, relay: { listen: false, pollInterval: '100ms', batchSize: 10 } },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await bouncer?.stop();
    await db?.drop();
  });

  it('sends what committed once, in each ordering key\'s order, and nothing of a handler that failed; no transaction stays open', async () => {
    const grant = (id: string, account: string, fail = false) => post(`${baseUrl}/bounced-grants`, { id, account, fail }, { 'Idempotency-Key': id });
    const ids = Array.from({ length: 60 }, (_, index) => `bounced-${index}`);
    const answers = await Promise.all(ids.map((id, index) => grant(id, `acc-${index % 3}`, index % 10 === 9)));
    expect(answers.map((answer) => answer.status)).toEqual(ids.map((_, index) => (index % 10 === 9 ? 500 : 201)));
    const committed = ids.filter((_, index) => index % 10 !== 9);
    // A duplicate of each writes nothing more.
    expect((await Promise.all(committed.slice(0, 10).map((id) => grant(id, `acc-${ids.indexOf(id) % 3}`)))).map((answer) => answer.headers.get('idempotent-replayed'))).toEqual(
      Array(10).fill('true'),
    );
    await until(async () => committed.every((id) => sentThroughBouncer.includes(id)), 'the relay sent every committed grant', 30_000);
    expect([...sentThroughBouncer].sort()).toEqual([...committed].sort());
    for (const account of ['acc-0', 'acc-1', 'acc-2']) {
      const written = (await db.query<{ id: string }>(`SELECT id FROM outbox_messages WHERE ordering_key = $1 ORDER BY seq`, [account])).map((row) => row.id);
      expect(sentThroughBouncer.filter((id) => written.includes(id))).toEqual(written);
    }
    // The broker got the last message before the relay's COMMIT marked it dispatched.
    await until(
      async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox_messages WHERE dispatched_at IS NULL`))[0].n === 0,
      'every message sent is marked dispatched',
    );
    // A batch that finds nothing is open for one round trip: one that stays open fails this wait.
    await until(
      async () =>
        (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`))[0].n === 0,
      'no transaction is left open',
    );
  });
});
