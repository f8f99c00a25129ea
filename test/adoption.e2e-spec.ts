import { resolve } from 'node:path';
import type pg from 'pg';
import { post } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/** The adopting service, built by `npm run build:test-apps` (`npm test` does). */
const ADOPTION_APP = resolve('dist/test-apps/test/apps/adoption/adoption-app.main.js');

/** The ways an existing service writes, each of which must commit with the claim. */
const STYLES = ['repository', 'data-source-manager', 'data-source-transaction', 'cls-transactional', 'cls-host', 'typeorm-transactional'] as const;

describe('adopting the module in a service whose data access exists already', () => {
  let db: TestDatabase;
  const processes: DemoProcess[] = [];

  async function start(style: string): Promise<DemoProcess> {
    const app = await startAppProcess(
      ADOPTION_APP,
      { DATABASE_URL: db.url, POOL_SIZE: '10', TYPEORM_TRANSACTIONAL: String(style === 'typeorm-transactional') },
      '/styles/round-trips',
    );
    processes.push(app);
    return app;
  }
  const ledgerRows = async (account: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]))[0].n);
  const claims = async (key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [key]))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    const migrator = await start('repository');
    await db.query('CREATE TABLE gates (name text PRIMARY KEY)');
    await migrator.kill();
  });

  afterAll(async () => {
    await Promise.all(processes.map((app) => app.kill('SIGKILL')));
    await db?.drop();
  });

  describe.each(STYLES)('written through %s', (style) => {
    let app: DemoProcess;
    const account = (name: string) => `acc-${style}-${name}`;
    const credit = (base: string, accountName: string, key: string, body: Record<string, unknown> = {}) =>
      post(`${base}/styles/${style}/${account(accountName)}`, { cents: 7, ...body }, { 'Idempotency-Key': `${style}-${key}` });

    beforeAll(async () => {
      app = await start(style);
    });

    afterAll(async () => {
      await app?.kill();
    });

    it('a process SIGKILLed mid-handler, after the write: nothing committed, and the redelivery applies the credit exactly once', async () => {
      const gate = `gate-${style}`;
      await db.query('INSERT INTO gates (name) VALUES ($1)', [gate]);
      const holder: pg.Client = await db.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT name FROM gates WHERE name = $1 FOR UPDATE', [gate]);
      const first = await start(style);
      const inFlight = expect(credit(first.baseUrl, 'crash', 'crash', { gate })).rejects.toThrow('fetch failed');
      await until(
        async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length === 1,
        'the handler wrote its credit and waits at the gate',
      );
      await first.kill('SIGKILL');
      await inFlight;
      await holder.query('ROLLBACK');
      await holder.end();
      expect(await ledgerRows(account('crash'))).toBe(0);
      expect(await claims(`${style}-crash`)).toBe(0);

      const second = await start(style);
      let redelivered = await credit(second.baseUrl, 'crash', 'crash', { gate });
      await until(async () => {
        if (redelivered.status !== 409) return true;
        redelivered = await credit(second.baseUrl, 'crash', 'crash', { gate });
        return false;
      }, "the dead process's transaction is gone");
      expect(redelivered.status).toBe(201);
      const again = await credit(second.baseUrl, 'crash', 'crash', { gate });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await ledgerRows(account('crash'))).toBe(1);
      await second.kill();
    });

    it('50 concurrent duplicates: one credit', async () => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => credit(app.baseUrl, 'fifty', 'fifty')));
      expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
      expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
      expect(await ledgerRows(account('fifty'))).toBe(1);
    });

    it('the handler throws after its write: nothing committed, and the key stays usable', async () => {
      expect((await credit(app.baseUrl, 'throws', 'throws', { fail: true })).status).toBe(500);
      expect(await ledgerRows(account('throws'))).toBe(0);
      expect(await claims(`${style}-throws`)).toBe(0);
      expect((await credit(app.baseUrl, 'throws', 'throws')).status).toBe(201);
      expect(await ledgerRows(account('throws'))).toBe(1);
    });

    it('20 concurrent first deliveries on a pool of 10: every request answered', async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => credit(app.baseUrl, 'twenty', `twenty-${i}`)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201));
      expect(await ledgerRows(account('twenty'))).toBe(20);
    });
  });

  it('warns once per handler when it writes to a second data source, which cannot commit with the claim', async () => {
    const app = await start('repository');
    for (const key of ['audit-1', 'audit-2']) {
      expect((await post(`${app.baseUrl}/styles/second-data-source/acc-audit`, { cents: 1 }, { 'Idempotency-Key': key })).status).toBe(201);
    }
    const warnings = app.output().split('\n').filter((line) => line.includes('used the data source'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/POST \/styles\/:style\/:account used the data source auditDataSource inside its idempotent handler/);
  });

  it('measures the round trips of each path against the same write in a plain TypeORM transaction', async () => {
    const measure = async (app: DemoProcess, path: string, key: string) => {
      const before = (await (await fetch(`${app.baseUrl}/styles/round-trips`)).json()) as { roundTrips: number };
      expect((await post(`${app.baseUrl}${path}`, { cents: 1 }, { 'Idempotency-Key': key })).status).toBe(201);
      const after = (await (await fetch(`${app.baseUrl}/styles/round-trips`)).json()) as { roundTrips: number };
      return after.roundTrips - before.roundTrips;
    };
    const roundTrips: Record<string, number> = {};
    const app = await start('repository');
    // Only queries sent while answering a request are counted: under a loaded CI a query the process
    // sends on its own (the store sampler's first, taken once the boot's schema check resolves, is the
    // one that can come that late) landed in a measured request twice (plain 4, repository 3). The
    // first write of a fresh process is not measured either, so the path is not charged for the pool's
    // first connection.
    await measure(app, '/styles/plain/acc-trips', 'plain-warm-up');
    roundTrips.plain = await measure(app, '/styles/plain/acc-trips', 'plain');
    for (const style of STYLES.filter((candidate) => candidate !== 'typeorm-transactional')) {
      roundTrips[style] = await measure(app, `/styles/${style}/acc-trips`, `trips-${style}`);
    }
    await app.kill();
    const patched = await start('typeorm-transactional');
    // As in the first app, the path is not the first write of a fresh process.
    await measure(patched, '/styles/plain/acc-trips', 'plain-patched');
    roundTrips['typeorm-transactional'] = await measure(patched, '/styles/typeorm-transactional/acc-trips', 'trips-typeorm-transactional');
    console.log(`round trips of one credit (one INSERT) by path: ${JSON.stringify(roundTrips)}`);
    // The claim travels with BEGIN and the record with COMMIT: the module adds none to the plain transaction.
    expect(roundTrips.repository).toBe(roundTrips.plain);
    expect(roundTrips['data-source-manager']).toBe(roundTrips.plain);
    expect(roundTrips['cls-host']).toBe(roundTrips.plain);
    // A transaction of the service's own becomes a savepoint in the claim's: SAVEPOINT and RELEASE.
    expect(roundTrips['data-source-transaction']).toBe(roundTrips.plain + 2);
    expect(roundTrips['cls-transactional']).toBe(roundTrips.plain + 2);
    expect(roundTrips['typeorm-transactional']).toBe(roundTrips.plain + 2);
  });
});
