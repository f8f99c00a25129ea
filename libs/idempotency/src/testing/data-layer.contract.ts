import { deepStrictEqual, notStrictEqual, ok, rejects, strictEqual } from 'node:assert/strict';
import type { ContractCheck } from './lease-store.contract.js';
import { until } from './until.js';

/** A running `DataLayerContractModule` service, as a process of its own. */
export interface DataLayerService {
  /** Where it listens: `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** What it has written to stdout and stderr so far. */
  output(): string;
  /** Ends it at once, as a crash does (SIGKILL). */
  kill(): Promise<void>;
}

/** What the harness is asked to start. */
export interface DataLayerStart {
  /** How many connections the layer's pool holds (its `max`); unset: the harness's default (10, say). */
  readonly poolMax?: number;
}

/**
 * What a data layer gives `dataLayerContract()`: its `DataLayerContractModule` service, and a look
 * at the database. The database holds the store and the outbox, made by the package's SQL
 * (`schemaSql()`; on MariaDB `mariaDbSchemaSql()` and `mariaDbOutboxSql()`); the contract adds its
 * own tables, `layer_credits` and `gates`.
 */
export interface DataLayerHarness {
  /** The database the store is on, whose SQL the contract's own statements are written in. @default 'postgres' */
  readonly database?: 'postgres' | 'mariadb';
  /** The service the checks share, which the suite starts before the checks and kills after them. */
  service(): DataLayerService;
  /** Starts another service on the same database, which the check that asked kills. */
  start(options?: DataLayerStart): Promise<DataLayerService>;
  /** Runs SQL in the database, outside the service: its rows. Placeholders are the driver's: `$1`, `$2`... on PostgreSQL, `?` on MariaDB. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Locks the `gates` row `gate` (`SELECT ... FOR UPDATE`) in a transaction of its own, so that a
   * handler that waits at it (`DataLayerWriter.waitAtGate`) is held mid-handler; resolves to the
   * release of that lock (ROLLBACK).
   */
  block(gate: string): Promise<() => Promise<void>>;
}

/** What the service answered. */
interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/**
 * What every data layer must do, end to end, as checks a test runner can run against the real
 * database: the claim and the handler's writes through the layer commit together or not at all
 * (a crash mid-handler, a handler that throws, a deadlock, 50 concurrent duplicates); a recorded response is
 * replayed byte for byte; the layer's own transactions inside a handler are savepoints, two at once
 * each undone alone; statements sent at once take turns; a bare COMMIT of the claim's transaction
 * is refused; `IdempotentRunner.run()` outside a handler, in the service's own transaction and
 * inside a handler; the outbox, lease mode, the purge and health through the layer. A new layer
 * serves `DataLayerContractModule` with a `DataLayerWriter` of its own, writes a `DataLayerHarness`
 * and runs them:
 *
 * ```ts
 * import { dataLayerContract } from 'nestjs-idempotent-consumer/testing';
 *
 * describe('my data layer', () => {
 *   let service: DataLayerService;
 *   beforeAll(async () => (service = await harness.start()));
 *   afterAll(() => service.kill());
 *   for (const check of dataLayerContract({ ...harness, service: () => service })) {
 *     it(check.name, check.run, 60_000);
 *   }
 * });
 * ```
 *
 * Each check writes to accounts and keys of its own, so one service serves them all, and kills
 * every service it started, also when it fails. Waits are bounded (30 s).
 */
export function dataLayerContract(harness: DataLayerHarness): ContractCheck[] {
  const sql = CONTRACT_SQL[harness.database ?? 'postgres'];
  /** `text` with its `$1`, `$2`... placeholders as the database's driver writes them. */
  const query = <T>(text: string, params?: unknown[]) => harness.query<T>(sql.placeholders(text), params);
  let tables: Promise<void> | undefined;
  /** The contract's tables, made once, before a check's first statement. */
  const made = () =>
    (tables ??= (async () => {
      for (const statement of sql.tables) {
        await harness.query(statement);
      }
    })());
  const check = (name: string, run: (service: DataLayerService) => Promise<void>): ContractCheck => ({
    name,
    run: async () => {
      await made();
      await run(harness.service());
    },
  });
  /** Runs `work` with a service started for it, killed however the work ends. */
  const withStarted = async (options: DataLayerStart | undefined, work: (started: DataLayerService) => Promise<void>) => {
    const started = await harness.start(options);
    try {
      await work(started);
    } finally {
      await started.kill();
    }
  };

  const post = async (base: string, path: string, body: Record<string, unknown>, key?: string): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'Idempotency-Key': key }) },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const credit = (base: string, account: string, key: string, body: Record<string, unknown> = {}) => post(base, `/credits/${account}`, { cents: 7, ...body }, key);
  const json = async (answer: Promise<Answer>) => JSON.parse((await answer).text) as unknown;
  /** The account's credits and their sum, as texts (node-postgres answers a count as one, mysql2 as a number). */
  const credits = async (account: string) => {
    const [{ n, cents }] = await query<{ n: unknown; cents: unknown }>('SELECT count(*) AS n, sum(cents) AS cents FROM layer_credits WHERE account = $1', [account]);
    return { n: String(n), cents: cents === null ? null : String(cents) };
  };
  const rows = async (account: string) => Number((await credits(account)).n);
  const count = async (text: string, params: unknown[]) => Number((await query<{ n: string }>(text, params))[0].n);
  const claims = (key: string) => count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [key]);
  const replayed = (answer: Answer) => answer.headers.get('idempotent-replayed') === 'true';
  /** Read with this realm's JSON, so that its arrays compare equal to the contract's under a test runner's sandbox. */
  const announced = async (service: DataLayerService) => JSON.parse(await (await fetch(`${service.baseUrl}/announced`)).text()) as string[];

  return [
    check('a process SIGKILLed mid-handler, after its write: nothing committed, and the redelivery applies the credit exactly once', async (service) => {
      const gate = `gate-${Date.now()}`;
      await query('INSERT INTO gates (name) VALUES ($1)', [gate]);
      const release = await harness.block(gate);
      try {
        await withStarted(undefined, async (doomed) => {
          const inFlight = rejects(credit(doomed.baseUrl, 'crash', 'crash', { gates: [gate] }), /fetch failed/);
          await until(
            async () => (await count(sql.lockWaits, [])) === 1,
            'the handler wrote its credit and waits at the gate',
          );
          await doomed.kill();
          await inFlight;
        });
      } finally {
        await release();
      }
      strictEqual(await rows('crash'), 0);
      strictEqual(await claims('crash'), 0);

      let redelivered = await credit(service.baseUrl, 'crash', 'crash', { gates: [gate] });
      await until(async () => {
        if (redelivered.status !== 409) return true;
        redelivered = await credit(service.baseUrl, 'crash', 'crash', { gates: [gate] });
        return false;
      }, "the dead process's transaction is gone");
      strictEqual(redelivered.status, 201);
      ok(replayed(await credit(service.baseUrl, 'crash', 'crash', { gates: [gate] })));
      strictEqual(await rows('crash'), 1);
    }),

    check('two handlers deadlocked: the victim is answered 503 with Retry-After (a retry), nothing of it kept; each key, retried, credits once', async (service) => {
      const [first, second, meeting] = ['first', 'second', 'meeting'].map((name) => `deadlock-${name}-${Date.now()}`);
      for (const gate of [first, second]) {
        await query('INSERT INTO gates (name) VALUES ($1)', [gate]);
      }
      // Each takes its first gate, meets the other (both holding theirs), then asks for the other's.
      const answers = await Promise.all([
        credit(service.baseUrl, 'deadlock-a', 'deadlock-a', { gates: [first], meeting, gatesAfter: [second] }),
        credit(service.baseUrl, 'deadlock-b', 'deadlock-b', { gates: [second], meeting, gatesAfter: [first] }),
      ]);
      deepStrictEqual(answers.map((answer) => answer.status).sort(), [201, 503]);
      const victim = answers[0].status === 503 ? 'deadlock-a' : 'deadlock-b';
      notStrictEqual(answers.find((answer) => answer.status === 503)?.headers.get('retry-after') ?? null, null);
      strictEqual(await rows(victim), 0);
      strictEqual(await claims(victim), 0);
      strictEqual((await credit(service.baseUrl, victim, victim)).status, 201);
      strictEqual(await rows('deadlock-a'), 1);
      strictEqual(await rows('deadlock-b'), 1);
    }),

    check('50 concurrent duplicates: one credit, every other answered as a replay or 409', async (service) => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => credit(service.baseUrl, 'fifty', 'fifty')));
      strictEqual(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null).length, 1);
      deepStrictEqual(answers.filter((answer) => answer.status !== 201 && answer.status !== 409), []);
      strictEqual(await rows('fifty'), 1);
      strictEqual(await claims('fifty'), 1);
    }),

    check('a handler that throws after its write: nothing committed, claim included, and the key stays usable', async (service) => {
      strictEqual((await credit(service.baseUrl, 'throws', 'throws', { fail: true })).status, 500);
      strictEqual(await rows('throws'), 0);
      strictEqual(await claims('throws'), 0);
      strictEqual((await credit(service.baseUrl, 'throws', 'throws')).status, 201);
      strictEqual(await rows('throws'), 1);
    }),

    check('replays the recorded response byte for byte, without running the handler again', async (service) => {
      const first = await credit(service.baseUrl, 'replay', 'replay');
      const again = await credit(service.baseUrl, 'replay', 'replay');
      strictEqual(first.status, 201);
      strictEqual(again.status, 201);
      strictEqual(again.text, first.text);
      strictEqual(again.headers.get('content-type'), first.headers.get('content-type'));
      ok(replayed(again));
      ok(first.text.includes('é ✓'));
      strictEqual(await rows('replay'), 1);
    }),

    check("the layer's own transaction inside the handler is a savepoint: committed, it commits with the claim; rolled back, only its write is undone", async (service) => {
      strictEqual((await credit(service.baseUrl, 'nested-commit', 'nested-commit', { nested: 'commit' })).status, 201);
      deepStrictEqual(await credits('nested-commit'), { n: '2', cents: '707' });
      strictEqual((await credit(service.baseUrl, 'nested-rollback', 'nested-rollback', { nested: 'rollback' })).status, 201);
      deepStrictEqual(await credits('nested-rollback'), { n: '1', cents: '7' });
      strictEqual(await claims('nested-rollback'), 1);
    }),

    ...(['commit', 'rollback'] as const).map((first) =>
      check(`two of the layer's transactions at once in one handler, the first to start ending with ${first}: each is undone alone`, async (service) => {
        const second = first === 'commit' ? 'rollback' : 'commit';
        const account = `parallel-${first}`;
        strictEqual((await credit(service.baseUrl, account, account, { parallel: [first, second] })).status, 201);
        // The handler's credit (7), and of 70 (the first) and 700 (the second), the one that committed.
        deepStrictEqual(await credits(account), { n: '2', cents: first === 'commit' ? '77' : '707' });
        strictEqual(await claims(account), 1);
        ok(replayed(await credit(service.baseUrl, account, account, { parallel: [first, second] })));
        strictEqual(await rows(account), 2);
      }),
    ),

    check("statements the handler sends at once take turns on the claim's connection, without node-postgres's warning of a query sent while another runs", async (service) => {
      strictEqual((await credit(service.baseUrl, 'at-once', 'at-once', { concurrent: 3 })).status, 201);
      strictEqual(await rows('at-once'), 4);
      ok(!service.output().includes('already executing a query'), service.output());
    }),

    check("two handlers that resume in one tick each read their own uncommitted write, and not the other's", async (service) => {
      const meet = (key: string) => post(service.baseUrl, '/meets/meets', { meeting: 'tick' }, key);
      const answers = await Promise.all([meet('meets-1'), meet('meets-2')]);
      deepStrictEqual(
        answers.map((answer) => ({ status: answer.status, body: JSON.parse(answer.text) as unknown })),
        Array(2).fill({ status: 201, body: { own: true, other: false } }),
      );
      strictEqual(await rows('meets'), 2);
    }),

    check('a nested transaction that rolls back before the handler throws leaves nothing behind', async (service) => {
      strictEqual((await credit(service.baseUrl, 'nested-fail', 'nested-fail', { nested: 'rollback', fail: true })).status, 500);
      strictEqual(await rows('nested-fail'), 0);
      strictEqual(await claims('nested-fail'), 0);
    }),

    check("a handler that sends a bare COMMIT of the claim's transaction is refused before it commits: answered 500, nothing committed", async (service) => {
      const first = await credit(service.baseUrl, 'commits', 'commits', { commitItself: true });
      strictEqual(first.status, 500);
      strictEqual((JSON.parse(first.text) as { type?: unknown }).type, 'urn:idempotency:claim-transaction', first.text);
      strictEqual(await rows('commits'), 0);
      strictEqual(await claims('commits'), 0);
    }),

    check('run() outside a handler: 20 concurrent calls of one key run the work once, the others answer its recorded result; failed work leaves nothing', async (service) => {
      const run = (key: string, body: Record<string, unknown> = {}) => json(post(service.baseUrl, '/runs/runs', { cents: 7, key, ...body }));
      deepStrictEqual(await run('run-fails', { fail: true }), { error: 'Error' });
      strictEqual(await rows('runs'), 0);
      strictEqual(await claims('run-fails'), 0);
      const answers = await Promise.all(Array.from({ length: 20 }, () => run('run-1')));
      // The first answers the result itself, the others its JSON: the Date as its ISO text.
      deepStrictEqual(answers, Array(20).fill({ result: { account: 'runs', cents: 7, at: new Date(0).toISOString() } }));
      strictEqual(await rows('runs'), 1);
      strictEqual(await claims('run-1'), 1);
    }),

    check("run() in the service's own transaction: the claim commits with it, or rolls back with it; 10 concurrent runs of one key, one credit", async (service) => {
      const run = (key: string, body: Record<string, unknown> = {}) => json(post(service.baseUrl, '/runs-own/own', { cents: 7, key, ...body }));
      deepStrictEqual(await run('own-rolled-back', { fail: true }), { error: 'the service fails after run()' });
      strictEqual(await rows('own'), 0);
      strictEqual(await claims('own-rolled-back'), 0);
      const answers = await Promise.all(Array.from({ length: 10 }, () => run('own-1')));
      deepStrictEqual(answers, Array(10).fill({ result: { account: 'own', cents: 7 } }));
      strictEqual(await rows('own'), 1);
      strictEqual(await claims('own-1'), 1);
      // The rolled-back key was never claimed: it runs now.
      deepStrictEqual(await run('own-rolled-back'), { result: { account: 'own', cents: 7 } });
      strictEqual(await rows('own'), 2);
    }),

    check('run() inside an idempotent handler joins its claim: 6 concurrent requests on a pool of 2 all succeed, each work once; a handler that throws after run() rolls its work back', async () => {
      // Its outbox relay would take the messages that the next checks wait for at the shared service: it is killed at the end.
      await withStarted({ poolMax: 2 }, async (small) => {
        const handled = (key: string, body: Record<string, unknown> = {}) => post(small.baseUrl, '/handler-runs/handled', { cents: 7, key, ...body }, `request-${key}`);
        const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => handled(`handled-${i}`)));
        deepStrictEqual(
          answers.map((answer) => answer.status),
          Array(6).fill(201),
        );
        strictEqual(await rows('handled'), 6);
        strictEqual(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = $1`, ['layer-handler-run']), 6);

        strictEqual((await handled('handled-failed', { fail: true })).status, 500);
        strictEqual(await rows('handled'), 6);
        strictEqual(await claims('handled-failed'), 0);
        strictEqual(await claims('request-handled-failed'), 0);
        // Nothing of the work was kept: the next delivery runs it.
        strictEqual((await handled('handled-failed')).status, 201);
        strictEqual(await rows('handled'), 7);
      });
    }),

    check('a message the handler publishes through the outbox leaves with its commit, once; a handler that throws after publishing leaves none', async (service) => {
      const outboxRows = (id: string) => count('SELECT count(*) AS n FROM outbox_messages WHERE id = $1', [id]);
      strictEqual((await credit(service.baseUrl, 'announce-failed', 'announce-failed', { announce: 'granted-failed', fail: true })).status, 500);
      const answers = await Promise.all(Array.from({ length: 10 }, () => credit(service.baseUrl, 'announce', 'announce', { announce: 'granted-1' })));
      deepStrictEqual(answers.filter((answer) => answer.status !== 201 && answer.status !== 409), []);
      await until(async () => (await announced(service)).includes('granted-1'), 'the relay sent granted-1');
      strictEqual(await outboxRows('granted-1'), 1);
      strictEqual(await outboxRows('granted-failed'), 0);
      strictEqual(await rows('announce'), 1);
      strictEqual(await rows('announce-failed'), 0);
      deepStrictEqual(
        (await announced(service)).filter((id) => id === 'granted-1' || id === 'granted-failed'),
        ['granted-1'],
      );
    }),

    check("Outbox.publish({ transaction }) in the service's own transaction: sent when it commits, never when it rolls back", async (service) => {
      const run = (key: string, body: Record<string, unknown>) => json(post(service.baseUrl, '/runs-own/own-announce', { cents: 7, key, ...body }));
      deepStrictEqual(await run('own-announce-rolled-back', { announce: 'own-granted-rolled-back', fail: true }), { error: 'the service fails after run()' });
      deepStrictEqual(await run('own-announce', { announce: 'own-granted' }), { result: { account: 'own-announce', cents: 7 } });
      await until(async () => (await announced(service)).includes('own-granted'), 'the relay sent own-granted');
      deepStrictEqual(await query('SELECT id FROM outbox_messages WHERE id LIKE $1', ['own-granted%']), [{ id: 'own-granted' }]);
      ok(!(await announced(service)).includes('own-granted-rolled-back'));
    }),

    check('lease mode claims on the store of the layer: 10 concurrent duplicates, one credit', async (service) => {
      const answers = await Promise.all(Array.from({ length: 10 }, () => post(service.baseUrl, '/leased/leased', { cents: 7 }, 'leased')));
      notStrictEqual(answers.filter((answer) => answer.status === 201).length, 0);
      deepStrictEqual(answers.filter((answer) => answer.status !== 201 && answer.status !== 409), []);
      strictEqual(await rows('leased'), 1);
    }),

    check('purges expired ids and reports health through the layer', async (service) => {
      await harness.query(sql.expiredIds);
      const purged = (await json(post(service.baseUrl, '/purge', {}))) as { outcome: string; rows: number };
      deepStrictEqual({ outcome: purged.outcome, rows: purged.rows }, { outcome: 'purged', rows: 25 });
      strictEqual(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = $1`, ['old']), 0);
      const health = (await (await fetch(`${service.baseUrl}/health`)).json()) as {
        idempotency: { store?: { totalBytes?: unknown }; purge?: { lastRun?: { outcome?: unknown; rows?: unknown } } };
      };
      // The status may be down by the duplicate rate of the checks above; the store's figures come through the layer.
      strictEqual(typeof health.idempotency.store?.totalBytes, 'number');
      deepStrictEqual({ outcome: health.idempotency.purge?.lastRun?.outcome, rows: health.idempotency.purge?.lastRun?.rows }, { outcome: 'purged', rows: 25 });
    }),
  ];
}

/** The contract's own statements in each database's SQL. */
const CONTRACT_SQL = {
  postgres: {
    placeholders: (text: string) => text,
    tables: [
      'CREATE TABLE IF NOT EXISTS layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)',
      'CREATE TABLE IF NOT EXISTS gates (name text PRIMARY KEY)',
    ],
    /** Sessions of this database waiting for a lock. */
    lockWaits: `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    /** 25 ids of consumer `old` that expired an hour ago. */
    expiredIds: `INSERT INTO processed_messages (consumer, message_id, sender, expires_at) SELECT 'old', 'old-' || i, 'test', now() - interval '1 hour' FROM generate_series(1, 25) i`,
  },
  mariadb: {
    placeholders: (text: string) => text.replace(/\$\d+/g, '?'),
    tables: [
      'CREATE TABLE IF NOT EXISTS layer_credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(255) NOT NULL, cents INT NOT NULL)',
      'CREATE TABLE IF NOT EXISTS gates (name VARCHAR(255) PRIMARY KEY)',
    ],
    lockWaits:
      "SELECT count(*) AS n FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.DB = DATABASE() AND t.trx_state = 'LOCK WAIT'",
    expiredIds:
      "INSERT INTO processed_messages (consumer, message_id, sender, expires_at) SELECT 'old', CONCAT('old-', seq), 'test', NOW(6) - INTERVAL 1 HOUR FROM seq_1_to_25",
  },
};
