import { connect } from 'node:net';
import { post } from './support/demo-app.js';
import { type DemoProcess, startDemoProcess } from './support/demo-process.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/** Whether a new TCP connection to `baseUrl` is accepted: a fetch could reuse a kept-alive one, which a closing server still serves. */
function acceptsConnections(baseUrl: string): Promise<boolean> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((done) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

describe('a process stopped in the middle of a handler', () => {
  let db: TestDatabase;
  const processes: DemoProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await Promise.all(processes.map((demo) => demo.kill()));
    await db?.drop();
  });

  /** Holds `account`'s row lock in a transaction of its own, so the next credit to it blocks mid-handler; `release` rolls it back. */
  async function holdAccountLock(account: string): Promise<{ release(): Promise<void> }> {
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT balance FROM accounts WHERE account = $1 FOR UPDATE', [account]);
    return {
      release: async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      },
    };
  }

  const handlerWaitsOnLock = () =>
    until(
      async () =>
        (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length === 1,
      'the handler waits on the account lock inside its claim transaction',
    );

  it('killed with SIGKILL: leaves nothing committed, and the redelivery processes exactly once', async () => {
    const account = 'acc-crash';
    const first = await startDemoProcess({ DATABASE_URL: db.url });
    processes.push(first);
    expect((await post(`${first.baseUrl}/credits`, { account, cents: 100 }, { 'Idempotency-Key': 'seed' })).status).toBe(201);

    // Hold the account's row lock so the next credit blocks mid-handler, its claim written but uncommitted.
    const lock = await holdAccountLock(account);
    const key = 'credit-during-crash';
    const inFlightFails = expect(
      post(`${first.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key }),
    ).rejects.toThrow('fetch failed');
    await handlerWaitsOnLock();

    await first.kill('SIGKILL');
    expect(first.child.signalCode).toBe('SIGKILL');
    await inFlightFails;
    await lock.release();
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

  describe.each([
    // Its client gone, the HTTP server has nothing to wait for: the shutdown reaches the data source with the claim open.
    { client: 'gone', title: 'the shutdown waits for the claim to settle and exits; the redelivery processes the credit once' },
    // Nest's module hooks run before the HTTP server closes: the handler goes on writing after them.
    { client: 'waiting', title: 'the handler goes on writing in its claim, is answered, and the process exits; the redelivery is a replay' },
  ])('stopped with SIGTERM while a claim is open, its client $client', ({ client, title }) => {
    it(title, async () => {
      const account = `acc-shutdown-${client}`;
      const key = `credit-during-shutdown-${client}`;
      const demo = await startDemoProcess({ DATABASE_URL: db.url });
      processes.push(demo);
      expect((await post(`${demo.baseUrl}/credits`, { account, cents: 100 }, { 'Idempotency-Key': `seed-${client}` })).status).toBe(201);

      // The handler blocks on the account's row lock inside its claim, between its two writes.
      const lock = await holdAccountLock(account);
      const abort = new AbortController();
      const inFlight = post(`${demo.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key }, abort.signal).catch(() => 'aborted' as const);
      await handlerWaitsOnLock();
      if (client === 'gone') {
        abort.abort();
        expect(await inFlight).toBe('aborted');
      }
      const exited = new Promise<number | null>((done) => demo.child.once('exit', (code) => done(code)));
      demo.child.kill('SIGTERM');
      await until(async () => !(await acceptsConnections(demo.baseUrl)), 'the stopping process no longer accepts connections');
      await lock.release();
      // A shutdown that loops on the open claim never exits: until() fails here.
      await until(async () => demo.child.exitCode !== null, 'the process exits once the claim has settled');
      expect(await exited).toBe(0);
      if (client === 'waiting') {
        expect(await inFlight).toMatchObject({ status: 201, body: { account, cents: 55, balance: 155 } });
        // The ledger row was written in the claim's transaction, not on a connection of its own.
        const [claim] = await db.query<{ xmin: string }>('SELECT xmin FROM processed_messages WHERE message_id = $1', [key]);
        expect(await db.query('SELECT xmin FROM ledger_entries WHERE account = $1 AND cents = 55', [account])).toEqual([claim]);
      }

      const second = await startDemoProcess({ DATABASE_URL: db.url });
      processes.push(second);
      const redelivered = await post(`${second.baseUrl}/credits`, { account, cents: 55 }, { 'Idempotency-Key': key });
      expect(redelivered).toMatchObject({ status: 201, body: { account, cents: 55, balance: 155 } });
      expect(redelivered.headers.get('idempotent-replayed')).toBe(client === 'waiting' ? 'true' : null);
      expect(await db.query('SELECT cents FROM ledger_entries WHERE account = $1 ORDER BY id', [account])).toEqual([{ cents: 100 }, { cents: 55 }]);
      expect(await db.query('SELECT balance FROM accounts WHERE account = $1', [account])).toEqual([{ balance: '155' }]);
    });
  });
});
