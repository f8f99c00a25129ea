import { post } from './support/demo-app.js';
import { type DemoProcess, startDemoProcess } from './support/demo-process.js';
import { PostgresCluster, postgresClustersAvailable, REPLICA_NAME } from './support/postgres-cluster.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { until } from './support/test-database.js';

const EVENTS = 400;
const KILL_AFTER = 150;
const CONCURRENCY = 8;
const CENTS = 100;
/** How long the provider keeps retrying one event before the test gives up on the demo. */
const DELIVERY_DEADLINE_MS = 60_000;
const DATABASE = 'credits';

/** How the primary waits for its replica: not at all, or for the replica's flush of every commit. */
type ReplicationMode = 'asynchronous' | 'synchronous';

/** The demo's `GET /health`: its status and the terminus body. */
async function health(baseUrl: string): Promise<{ status: number; body: { status: string; details?: Record<string, { status: string }> } }> {
  const response = await fetch(`${baseUrl}/health`);
  return { status: response.status, body: (await response.json()) as { status: string } };
}

/** A `credit.granted` event of the payments provider, crediting an account of its own. */
function paymentEvent(id: string, account: string) {
  return { id, type: 'credit.granted', data: { account, cents: CENTS } };
}

/** One delivery of `event` to the demo's webhook: the status (0 when no HTTP answer came) and whether it was a replay. */
async function deliverOnce(baseUrl: string, event: object): Promise<{ status: number; replayed: boolean; error?: string }> {
  try {
    const answer = await post(`${baseUrl}/webhooks/payments`, event);
    return { status: answer.status, replayed: answer.headers.get('idempotent-replayed') === 'true' };
  } catch (error) {
    return { status: 0, replayed: false, error: (error as Error).message };
  }
}

/**
 * The claim and the work fail over together: the demo runs against a primary PostgreSQL through
 * one address (a TCP proxy) while a webhook provider delivers events with retries; mid-load the
 * primary dies (`pg_ctl stop -m immediate`), its streaming replica is promoted and the address
 * moves to it. Counted on the promoted replica, every event has exactly one effect. Both clusters
 * are private to the suite: the machine's server binaries, temporary folders, ports of their own.
 */
(postgresClustersAvailable() ? describe : describe.skip)('a failover of PostgreSQL to its replica in the middle of a webhook load', () => {
  /** What a test started, stopped in afterEach even when the test failed or timed out. */
  const started: { primary?: PostgresCluster; replica?: PostgresCluster; proxy?: TcpProxy; demo?: DemoProcess } = {};

  afterEach(async () => {
    const { primary, replica, proxy, demo } = started;
    delete started.primary;
    delete started.replica;
    delete started.proxy;
    delete started.demo;
    await demo?.kill();
    await proxy?.close();
    await replica?.destroy(false);
    await primary?.destroy();
  });

  it.each<[ReplicationMode, string]>([
    ['asynchronous', 'an acknowledged event the replica had not received is reprocessed on redelivery, and none has two effects'],
    ['synchronous', 'every event acknowledged before the kill is on the replica, and none has two effects'],
  ])('%s replication: %s; the demo recovers without a restart, /health down then up', async (mode) => {
    try {
      const primary = (started.primary = await PostgresCluster.startPrimary(DATABASE));
      const replica = (started.replica = await primary.startReplica());
      if (mode === 'synchronous') {
        await primary.requireSynchronousReplica();
      }
      expect(await primary.query('SELECT application_name, sync_state FROM pg_stat_replication')).toEqual([
        { application_name: REPLICA_NAME, sync_state: mode === 'synchronous' ? 'sync' : 'async' },
      ]);
      const proxy = (started.proxy = TcpProxy.toDatabase(primary.url(DATABASE)));
      await proxy.start();
      const demo = (started.demo = await startDemoProcess({ DATABASE_URL: proxy.url(primary.url(DATABASE)) }));
      const pid = demo.child.pid;
      const { baseUrl } = demo;
      expect((await health(baseUrl)).status).toBe(200);

      const eventId = (i: number) => `evt-failover-${mode}-${i}`;
      const account = (i: number) => `acc-failover-${mode}-${i}`;
      const attempts = new Map<string, number>();
      const failedAnswers = new Map<number, number>();
      let replayedInLoad = 0;
      const acknowledged = new Set<string>();
      let killedAt: number | undefined;
      let movedAt: number | undefined;
      let firstAnswerAfterMove: number | undefined;
      let failover: Promise<{ acknowledgedBeforeKill: string[]; lost: string[]; healthDownAt: number; healthUpAt: number }> | undefined;
      let failoverError: unknown;

      /** Posts event `i` until it gets a 2xx (a replay counts), backing off from 25 ms to 1 s, as a webhook provider does. */
      const deliver = async (i: number) => {
        const id = eventId(i);
        const firstAttemptAt = performance.now();
        for (let attempt = 1; ; attempt++) {
          attempts.set(id, attempt);
          const answer = await deliverOnce(baseUrl, paymentEvent(id, account(i)));
          if (answer.status >= 200 && answer.status < 300) {
            acknowledged.add(id);
            if (answer.replayed) replayedInLoad++;
            if (movedAt !== undefined) firstAnswerAfterMove ??= performance.now();
            return;
          }
          failedAnswers.set(answer.status, (failedAnswers.get(answer.status) ?? 0) + 1);
          if (failoverError) throw failoverError;
          if (performance.now() - firstAttemptAt > DELIVERY_DEADLINE_MS) {
            throw new Error(`event ${id} got no 2xx in ${DELIVERY_DEADLINE_MS} ms (${attempt} attempts, last ${JSON.stringify(answer)})`);
          }
          await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** (attempt - 1))));
        }
      };

      /** Kills the primary, promotes the replica, reads what it holds, then moves the demo's address to it. */
      const failOver = async () => {
        const acknowledgedBeforeKill = [...acknowledged];
        killedAt = performance.now();
        await primary.killImmediately();
        await until(async () => (await health(baseUrl)).status >= 300, '/health is down while there is no primary');
        const healthDownAt = performance.now();
        const down = await health(baseUrl);
        expect(down).toMatchObject({ status: 503, body: { status: 'error', details: { database: { status: 'down' } } } });

        await replica.promote();
        // Every 2xx so far came from the old primary: the new one is not reachable yet.
        const acknowledgedBeforeMove = [...acknowledged];
        const held = await replica.query<{ message_id: string }>(
          `SELECT message_id FROM processed_messages WHERE message_id = ANY($1)`,
          [acknowledgedBeforeMove],
          DATABASE,
        );
        const heldIds = new Set(held.map((row) => row.message_id));
        // The claim and the work survive together or not at all.
        const claimsWithoutOneEffect = await replica.query(
          `SELECT p.message_id, count(l.id)::int AS effects
           FROM processed_messages p LEFT JOIN ledger_entries l ON l.account = replace(p.message_id, 'evt-', 'acc-')
           GROUP BY p.message_id HAVING count(l.id) <> 1`,
          [],
          DATABASE,
        );
        expect(claimsWithoutOneEffect).toEqual([]);
        const effectsWithoutClaim = await replica.query(
          `SELECT l.account FROM ledger_entries l
           WHERE NOT EXISTS (SELECT 1 FROM processed_messages p WHERE p.message_id = replace(l.account, 'acc-', 'evt-'))`,
          [],
          DATABASE,
        );
        expect(effectsWithoutClaim).toEqual([]);

        proxy.retarget(replica.port);
        movedAt = performance.now();
        await until(async () => (await health(baseUrl)).status === 200, '/health is up once the address has moved', 30_000);
        return {
          acknowledgedBeforeKill,
          lost: acknowledgedBeforeMove.filter((id) => !heldIds.has(id)),
          healthDownAt,
          healthUpAt: performance.now(),
        };
      };

      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < EVENTS) {
            await deliver(next++);
            if (!failover && acknowledged.size >= KILL_AFTER) {
              failover = failOver();
              failover.catch((error: unknown) => (failoverError = error));
            }
          }
        }),
      );
      const { acknowledgedBeforeKill, lost, healthDownAt, healthUpAt } = await failover!;
      expect(acknowledged.size).toBe(EVENTS);
      const retried = [...attempts.values()].filter((count) => count > 1).length;

      // The provider delivers every event once more, as at-least-once senders may: each is answered as a replay, but
      // an acknowledged event the replica lost, which is processed now (a sender that never redelivers would lose it).
      const reprocessed: string[] = [];
      for (let i = 0; i < EVENTS; i++) {
        const answer = await deliverOnce(baseUrl, paymentEvent(eventId(i), account(i)));
        expect(answer).toMatchObject({ status: 200 });
        if (!answer.replayed) reprocessed.push(eventId(i));
      }

      // Counted on the surviving database: the ledger entries and the balance of each event's account.
      const effects = await replica.query<{ account: string; entries: number; balance: string | null }>(
        `SELECT a.account, (SELECT count(*)::int FROM ledger_entries l WHERE l.account = a.account) AS entries, b.balance::text AS balance
         FROM unnest($1::text[]) AS a(account) LEFT JOIN accounts b ON b.account = a.account`,
        [Array.from({ length: EVENTS }, (_, i) => account(i))],
        DATABASE,
      );
      const [{ claims }] = await replica.query<{ claims: number }>(
        `SELECT count(DISTINCT message_id)::int AS claims FROM processed_messages WHERE consumer = 'POST /webhooks/payments'`,
        [],
        DATABASE,
      );
      const since = (at: number | undefined) => `${Math.round((at ?? NaN) - killedAt!)} ms`;
      console.log(
        `failover, ${mode} replication: ${EVENTS} events sent, ${effects.reduce((sum, row) => sum + row.entries, 0)} effects, ${claims} claims; ` +
          `${acknowledgedBeforeKill.length} acknowledged before the kill; ${retried} retried by the provider (${replayedInLoad} answered as replays); ` +
          `${lost.length} acknowledged but lost on the replica, ${reprocessed.length} reprocessed on redelivery; ` +
          `/health down ${since(healthDownAt)} after the kill, up ${since(healthUpAt)} after it; first 2xx after the move ${since(firstAnswerAfterMove)} ` +
          `after the kill; answers that were not 2xx: ${[...failedAnswers].map(([status, count]) => `${status} x${count}`).join(', ')} (0: no HTTP answer)`,
      );

      expect(firstAnswerAfterMove).toBeDefined();
      expect(reprocessed).toEqual(expect.arrayContaining(lost));
      if (mode === 'synchronous') {
        expect(lost).toEqual([]);
        expect(reprocessed).toEqual([]);
      }
      expect(effects.filter((row) => row.entries === 0)).toEqual([]);
      expect(effects.filter((row) => row.entries > 1)).toEqual([]);
      expect(effects.filter((row) => row.balance !== String(CENTS))).toEqual([]);
      expect(claims).toBe(EVENTS);

      // The same process answers: it was never restarted.
      expect(demo.child.pid).toBe(pid);
      expect([demo.child.exitCode, demo.child.signalCode]).toEqual([null, null]);
    } catch (error) {
      const { demo, primary, replica } = started;
      console.log(
        [demo && `demo:\n${demo.output().slice(-20_000)}`, primary && `primary:\n${await primary.log()}`, replica && `replica:\n${await replica.log()}`]
          .filter(Boolean)
          .join('\n\n'),
      );
      throw error;
    }
  });
});
