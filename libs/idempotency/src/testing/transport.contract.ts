import { deepStrictEqual, ok, strictEqual } from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DatabaseCut } from './database-cut.js';
import type { ContractCheck } from './lease-store.contract.js';
import { until } from './until.js';

/** A message a check publishes through the harness. */
export interface ContractMessage {
  /** Its idempotency key, unique to the check: the broker's message id, or the payload field the handler is keyed by. */
  readonly key: string;
}

/** A consumer application the harness started. */
export interface ContractConsumer {
  /** The lines it has logged so far (a capturing logger's, or a process's output split by line). */
  logs(): readonly string[];
  /** Ends it gracefully: a message it has not settled goes back to the broker. The contract ends each consumer once. */
  stop(): Promise<void>;
  /** Ends it at once, as a crash does (SIGKILL); a consumer started `crashable`. */
  kill(): Promise<void>;
}

/** What the harness is asked to start. */
export interface ContractStart {
  /** Where the consumer reaches the store; the harness's own database unless given (the outage check passes a proxy's). */
  readonly databaseUrl?: string;
  /** The consumer must be one that `kill()` ends as a crash does: a process of its own. */
  readonly crashable?: boolean;
}

/**
 * What a transport gives `transportContract()`: a consumer application with idempotent handlers
 * of three kinds (an effect handler that writes one effect in the claim's transaction; a poison
 * handler that writes one and then always throws; both keyed as the transport keys by default, or
 * by a payload field), a way to publish to them, and a look at the database and the broker.
 * Each method may use suite state (a queue per check, say); the checks end every consumer they start.
 */
export interface TransportHarness {
  /** Starts a consumer application and resolves once it consumes. */
  start(options?: ContractStart): Promise<ContractConsumer>;
  /** Publishes one message to the effect handler. */
  publish(message: ContractMessage): Promise<void>;
  /** Publishes `copies` broker messages of one message: what a producer that retries sends (new broker ids where the broker would drop a repeated one). */
  publishCopies(message: ContractMessage, copies: number): Promise<void>;
  /** Publishes one message to the poison handler. */
  publishPoison(message: ContractMessage): Promise<void>;
  /** Publishes one message to the effect handler without its key (no message id, or the payload field left out). */
  publishWithoutKey(message: ContractMessage): Promise<void>;
  /** How many effects of `message` the database holds. */
  effects(message: ContractMessage): Promise<number>;
  /**
   * Holds what the effect handler of `message` writes (a row or table lock), so that its delivery
   * waits mid-handler inside its claim's transaction; resolves to the release of that lock.
   */
  block(message: ContractMessage): Promise<() => Promise<void>>;
  /** Whether the broker holds nothing for the consumer: no message waiting, none delivered and unsettled. */
  drained(): Promise<boolean>;
  /** How many broker messages of `message` were dead-lettered (or failed for good). */
  deadLettered(message: ContractMessage): Promise<number>;
  /** Runs SQL in the store's database, with `$1`, `$2`... placeholders. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Whether the effect handler waits at the lock `block()` holds, inside its claim. Unset: whether
   * exactly one backend of the PostgreSQL database waits on a lock (`pg_stat_activity`); a store
   * on another database says it its own way.
   */
  blocked?(): Promise<boolean>;
  /** The store's database. */
  readonly databaseUrl: string;
  /** How often the poison handler runs before its message is dead-lettered (its `maxAttempts`, or the broker's own limit). */
  readonly poisonAttempts: number;
  /** What the module's error line says of a message without its key: `the AMQP messageId property is missing`. */
  readonly missingKey: string;
  /** The store's table. @default 'processed_messages' */
  readonly tableName?: string;
  /** Checks of the transport's own, run at the end of the contract's check of the same name, with its message(s) and consumer(s). */
  readonly also?: ContractExtras;
}

/** A transport's own checks, each run where the contract's check of its name ends. */
export interface ContractExtras {
  /** After the 50 copies were settled and the consumer stopped (the replies each copy got, say). */
  readonly fiftyCopies?: (message: ContractMessage, consumer: ContractConsumer) => Promise<void>;
  /** Before the kill, the handler waiting mid-handler. */
  readonly beforeKill?: (message: ContractMessage) => Promise<void>;
  /** After the kill, before the next consumer starts (the broker's redelivered flag, say). */
  readonly afterKill?: (message: ContractMessage) => Promise<void>;
  /** After the redelivery was processed by the next consumer, stopped since. */
  readonly killedMidHandler?: (message: ContractMessage, consumer: ContractConsumer) => Promise<void>;
  /** After the outage's messages were processed (the retry delays the consumer logged, say). */
  readonly databaseOutage?: (messages: readonly ContractMessage[], consumer: ContractConsumer) => Promise<void>;
  /** After the poison message was dead-lettered (how often the handler ran, say). */
  readonly poison?: (message: ContractMessage, consumer: ContractConsumer) => Promise<void>;
  /** After the message without its key was dead-lettered. */
  readonly missingKey?: (message: ContractMessage, consumer: ContractConsumer) => Promise<void>;
}

/** How many messages the outage check publishes while the database is away. */
const OUTAGE_MESSAGES = 20;
/** How long the database is away. */
const OUTAGE_MS = 2_000;

/**
 * What every message transport must do, end to end, as checks a test runner can run against the
 * real broker and database: one message published 50 times has one effect; a consumer killed
 * mid-handler leaves the redelivery to process it once; after a 2 s database outage each message
 * is processed once and none is dead-lettered; a poison message is dead-lettered after its
 * attempts, nothing committed; a message without its key is dead-lettered without its handler
 * running. A new transport writes a `TransportHarness` and runs them:
 *
 * ```ts
 * import { transportContract } from 'nestjs-idempotent-consumer/testing';
 *
 * describe('my transport', () => {
 *   for (const check of transportContract(harness)) {
 *     it(check.name, check.run, 180_000);
 *   }
 * });
 * ```
 *
 * Each check publishes messages of its own (keys with a random part) and stops or kills every
 * consumer it started, also when it fails. Waits are bounded (30 s, 60 s after the outage).
 */
export function transportContract(harness: TransportHarness): ContractCheck[] {
  const table = harness.tableName ?? 'processed_messages';
  const run = randomUUID().slice(0, 8);
  const message = (name: string): ContractMessage => ({ key: `${name}-${run}` });
  const claims = async (key: string) => Number((await harness.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE message_id = $1`, [key]))[0].n);
  const claimKeys = async () => (await harness.query<{ message_id: string }>(`SELECT message_id FROM ${table}`)).map((row) => row.message_id);
  const logged = (consumer: ContractConsumer, text: string) => consumer.logs().filter((line) => line.includes(text)).length;
  /** Whether exactly one backend of the database waits on a lock: the handler, blocked inside its claim. */
  const handlerBlocked =
    harness.blocked ??
    (async () =>
      Number(
        (await harness.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n,
      ) === 1);
  /** Runs `check` with the consumers it starts, each ended once, however the check ends. */
  const withConsumers = (check: (start: (options?: ContractStart) => Promise<ContractConsumer>) => Promise<void>) => async () => {
    const running = new Set<ContractConsumer>();
    const once = (consumer: ContractConsumer, end: () => Promise<void>) => async () => {
      if (running.delete(consumer)) {
        await end();
      }
    };
    try {
      await check(async (options) => {
        const started = await harness.start(options);
        running.add(started);
        return { logs: () => started.logs(), stop: once(started, () => started.stop()), kill: once(started, () => started.kill()) };
      });
    } finally {
      await Promise.all([...running].map((consumer) => consumer.stop().catch(() => undefined)));
    }
  };

  return [
    {
      name: 'one message published 50 times → one effect, the 49 others settled as duplicates, nothing dead-lettered, nothing left on the broker',
      run: withConsumers(async (start) => {
        const fifty = message('fifty');
        const consumer = await start();
        await harness.publishCopies(fifty, 50);
        const duplicate = `Duplicate of '${fifty.key}'`;
        await until(
          // At least one effect: a transport that runs more copies fails the assertions below at once, not this wait's bound.
          async () => logged(consumer, duplicate) === 49 && (await harness.effects(fifty)) >= 1 && (await harness.drained()),
          'every copy is settled',
        );
        await consumer.stop(); // an unsettled copy would return to the broker now
        ok(await harness.drained(), 'nothing is left on the broker');
        strictEqual(await harness.deadLettered(fifty), 0);
        strictEqual(await harness.effects(fifty), 1);
        strictEqual(await claims(fifty.key), 1);
        strictEqual(logged(consumer, duplicate), 49);
        await harness.also?.fiftyCopies?.(fifty, consumer);
      }),
    },
    {
      name: 'a consumer killed (SIGKILL) mid-handler, its claim uncommitted → the redelivery is processed once by the next consumer',
      run: withConsumers(async (start) => {
        const killed = message('killed');
        const first = await start({ crashable: true });
        const release = await harness.block(killed);
        try {
          await harness.publish(killed);
          await until(handlerBlocked, 'the handler waits mid-handler inside its claim transaction');
          await harness.also?.beforeKill?.(killed);
          await first.kill();
        } finally {
          await release();
        }
        strictEqual(await harness.effects(killed), 0, 'nothing of the killed delivery is committed');
        await harness.also?.afterKill?.(killed);
        const next = await start();
        await until(async () => (await harness.effects(killed)) >= 1 && (await harness.drained()), 'the redelivery is processed');
        await next.stop();
        ok(await harness.drained(), 'nothing is left on the broker');
        strictEqual(await harness.deadLettered(killed), 0);
        strictEqual(await harness.effects(killed), 1);
        strictEqual(await claims(killed.key), 1);
        await harness.also?.killedMidHandler?.(killed, next);
      }),
    },
    {
      name: `a ${OUTAGE_MS / 1000} s database outage while ${OUTAGE_MESSAGES} messages arrive → their deliveries fail and are retried, none is dead-lettered, each is processed once after it`,
      run: withConsumers(async (start) => {
        const messages = Array.from({ length: OUTAGE_MESSAGES }, (_, i) => message(`outage-${i}`));
        const cut = await DatabaseCut.start(harness.databaseUrl);
        try {
          const consumer = await start({ databaseUrl: cut.url });
          cut.refuse();
          const outage = performance.now();
          await Promise.all(messages.map((each) => harness.publish(each)));
          const failed = (line: string) => line.includes('failed') && messages.some(({ key }) => line.includes(`'${key}'`));
          await until(() => Promise.resolve(consumer.logs().some(failed)), 'deliveries fail during the outage');
          await until(() => Promise.resolve(performance.now() - outage >= OUTAGE_MS), `the outage has lasted ${OUTAGE_MS / 1000} s`);
          cut.accept();
          const processed = async () => (await Promise.all(messages.map((each) => harness.effects(each)))).every((effects) => effects === 1);
          await until(async () => (await processed()) && (await harness.drained()), 'every message is processed after the outage', 60_000);
          await consumer.stop();
          ok(await harness.drained(), 'nothing is left on the broker');
          for (const each of messages) {
            strictEqual(await harness.deadLettered(each), 0, `${each.key} is not dead-lettered`);
            strictEqual(await harness.effects(each), 1, `${each.key} has one effect`);
            strictEqual(await claims(each.key), 1, `${each.key} has one claim`);
          }
          await harness.also?.databaseOutage?.(messages, consumer);
        } finally {
          await cut.close();
        }
      }),
    },
    {
      name: 'a poison message → dead-lettered after its attempts, each failure logged once, nothing committed, not delivered again',
      run: withConsumers(async (start) => {
        const poison = message('poison');
        const consumer = await start();
        await harness.publishPoison(poison);
        await until(async () => (await harness.deadLettered(poison)) === 1, 'the message is dead-lettered');
        await consumer.stop();
        ok(await harness.drained(), 'nothing is left on the broker');
        strictEqual(await harness.deadLettered(poison), 1);
        strictEqual(await harness.effects(poison), 0);
        strictEqual(await claims(poison.key), 0);
        const failures = consumer.logs().filter((line) => line.includes(`'${poison.key}'`) && line.includes('failed'));
        strictEqual(failures.length, harness.poisonAttempts, `one failure line per attempt:\n${failures.join('\n')}`);
        await harness.also?.poison?.(poison, consumer);
      }),
    },
    {
      name: 'a message without its key → dead-lettered with an error line naming where the key was to be read, its handler never run',
      run: withConsumers(async (start) => {
        const keyless = message('keyless');
        const consumer = await start();
        const keysBefore = new Set(await claimKeys());
        await harness.publishWithoutKey(keyless);
        await until(async () => (await harness.deadLettered(keyless)) === 1, 'the message is dead-lettered');
        await consumer.stop();
        ok(await harness.drained(), 'nothing is left on the broker');
        strictEqual(await harness.effects(keyless), 0);
        // A message of an earlier check may still settle meanwhile, under its own key; nothing else is claimed.
        const added = (await claimKeys()).filter((key) => !keysBefore.has(key));
        deepStrictEqual(added.filter((key) => key === keyless.key || !key.endsWith(`-${run}`)), []);
        const named = consumer.logs().some((line) => line.includes('ERROR') && line.includes(harness.missingKey));
        ok(named, `an error line names the missing key:\n${consumer.logs().join('\n')}`);
        await harness.also?.missingKey?.(keyless, consumer);
      }),
    },
  ];
}
