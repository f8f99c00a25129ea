import { post } from './support/demo-app.js';
import { type DemoProcess, startDemoProcess } from './support/demo-process.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

describe('a process killed with SIGKILL in the middle of a handler', () => {
  let db: TestDatabase;
  const processes: DemoProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await Promise.all(processes.map((demo) => demo.kill()));
    await db?.drop();
  });

  it('leaves nothing committed, and the redelivery processes exactly once', async () => {
    const account = 'acc-crash';
    const first = await startDemoProcess({ DATABASE_URL: db.url });
    processes.push(first);
    expect((await post(`${first.baseUrl}/credits`, { account, cents: 100 }, { 'Idempotency-Key': 'seed' })).status).toBe(201);

    // Hold the account's row lock so the next credit blocks mid-handler, its claim written but uncommitted.
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT balance FROM accounts WHERE account = $1 FOR UPDATE', [account]);
    const key = 'credit-during-crash';
    const inFlightFails = expect(
      post(`${first.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key }),
    ).rejects.toThrow('fetch failed');
    await until(
      async () =>
        (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))
          .length === 1,
      'the handler waits on the account lock inside its claim transaction',
    );

    await first.kill('SIGKILL');
    expect(first.child.signalCode).toBe('SIGKILL');
    await inFlightFails;
    await holder.query('ROLLBACK');
    await holder.end();
    expect(await db.query('SELECT 1 FROM processed_messages WHERE message_id = $1', [key])).toEqual([]);
    expect(await db.query('SELECT 1 FROM ledger_entries WHERE cents = 55')).toEqual([]);

    // The client redelivers to a fresh process; 409 only while the dead process's backend is still unwinding.
    const second = await startDemoProcess({ DATABASE_URL: db.url });
    processes.push(second);
    let redelivered = await post(`${second.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key });
    await until(async () => {
      if (redelivered.status !== 409) return true;
      redelivered = await post(`${second.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key });
      return false;
    }, 'the redelivery is no longer answered as in flight');
    expect(redelivered).toMatchObject({ status: 201, body: { account, cents: 55, balance: 155 } });
    expect(redelivered.headers.get('idempotent-replayed')).toBeNull();

    const duplicate = await post(`${second.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key });
    expect(duplicate).toMatchObject({ status: 201, body: redelivered.body });
    expect(duplicate.headers.get('idempotent-replayed')).toBe('true');
    expect(await db.query('SELECT cents FROM ledger_entries WHERE account = $1 ORDER BY id', [account])).toEqual([
      { cents: 100 },
      { cents: 55 },
    ]);
    expect(await db.query('SELECT balance FROM accounts WHERE account = $1', [account])).toEqual([{ balance: '155' }]);
  });
});
