import { PREFETCH } from '../app/bench-app.module.js';
import { type ConsumerArm, CREDIT_PATTERNS } from '../app/bench-messages.controller.js';
import { type BenchBroker, openBenchBroker, RABBITMQ_URL } from '../support/bench-broker.js';
import { type BenchConsumerProcess, startBenchConsumer } from '../support/bench-consumer.process.js';
import type { BenchDatabase } from '../support/bench-database.js';
import { nthCredit } from '../support/http-load.js';
import { lastLedgerRow, ledgerRowsAfter, waitForEffects } from '../support/ledger-effects.js';
import { type Arm, interleave, type Measurement, type Summary, summarize, withDatabaseCpu } from '../support/measurement.js';
import { type BenchCase, type BenchContext, type CaseReport, CaseSkipped, emptyReport, reportAgainstPlain } from './bench-case.js';

/**
 * Case 4: the credit handler as an idempotent `@EventPattern` (the module acks) against the very
 * same handler and transaction without it (acking itself), same prefetch. Each round fills the
 * arm's queue first, then lets its consumer drain it: messages per second from the start of
 * consumption until the database holds every message's effect.
 */
export const rabbitmqConsumer: BenchCase = {
  id: 4,
  title: 'RabbitMQ consumer',
  async run(context): Promise<CaseReport> {
    const report = emptyReport();
    const drained = await drainConsumers(context, 'c4', ['plain', 'idempotent']);
    const ratio = reportAgainstPlain(report, {
      variant: `prefetch ${PREFETCH}`,
      floorLabel: 'idempotent / plain messages per second',
      floor: 0.85,
      chartTitle: `4 · RabbitMQ consumer · prefetch ${PREFETCH}`,
      unit: 'msg/s',
      plain: drained.medians.plain,
      idempotent: drained.medians.idempotent,
    });
    report.details = { ...drained, ratio };
    return report;
  },
};

/** What `drainConsumers` measured: the rounds and medians of each variant, and how. */
export interface DrainedConsumers<Variant extends ConsumerArm> {
  prefetch: number;
  persistent: false;
  messagesPerRound: number;
  warmupMessages: number;
  rounds: Record<string, Measurement[]>;
  medians: Record<Variant, Summary>;
}

/**
 * Measures a consumer process per variant, interleaved: each round fills the variant's queue
 * first, then lets its consumer drain it. `label` names the run's queues and message ids.
 * @throws CaseSkipped when RabbitMQ does not answer.
 */
export async function drainConsumers<Variant extends ConsumerArm>(
  { settings, database, runtimes, log }: BenchContext,
  label: string,
  variants: Variant[],
): Promise<DrainedConsumers<Variant>> {
  const broker = await openBenchBroker().catch((error: unknown) => {
    throw new CaseSkipped(`RabbitMQ is not reachable at ${RABBITMQ_URL} (${(error as Error).message}); set RABBITMQ_URL`);
  });
  const runQueue = `bench-${label}-${process.pid}-${Date.now().toString(36)}`;
  const messagesPerRound = Math.round(settings.consumerMessages / settings.rounds);
  // The warm-up is to a round what it is in the HTTP cases (3 s to 6 s in a full run).
  const warmupMessages = Math.round((messagesPerRound * settings.warmupSeconds) / settings.roundSeconds);
  const consumers: BenchConsumerProcess[] = [];
  const queues: string[] = [];
  try {
    const arm = async (variant: ConsumerArm): Promise<Arm> => {
      // One process per variant, as in case 1: the plain one never pays for what the module
      // switches on once used. A queue per variant, so the two never share a backlog.
      const consumer = await startBenchConsumer(database.url, broker.url, runtimes.headline);
      consumers.push(consumer);
      const queue = `${runQueue}-${variant}`;
      await broker.declareQueue(queue);
      queues.push(queue);
      return {
        name: variant,
        measure: (r) =>
          withDatabaseCpu(database, () =>
            drainRound({ database, broker, consumer, queue, variant, label, round: r, messages: r === 0 ? warmupMessages : messagesPerRound }),
          ),
      };
    };
    const arms: Arm[] = [];
    for (const variant of variants) {
      arms.push(await arm(variant));
    }
    const rounds = await interleave(arms, { ...settings, log });
    const medians = Object.fromEntries(variants.map((variant) => [variant, summarize(rounds[variant])])) as Record<Variant, Summary>;
    return { prefetch: PREFETCH, persistent: false, messagesPerRound, warmupMessages, rounds, medians };
  } finally {
    await Promise.all(consumers.map((consumer) => consumer.stop()));
    for (const queue of queues) {
      await broker.deleteQueue(queue);
    }
    await broker.close();
  }
}

/** One round of one arm: `messages` credits for `variant`'s consumer to drain from `queue`. */
interface DrainRound {
  database: BenchDatabase;
  broker: BenchBroker;
  consumer: BenchConsumerProcess;
  queue: string;
  variant: ConsumerArm;
  label: string;
  round: number;
  messages: number;
}

/**
 * Fills the queue with the round's messages (each a new `messageId`), then times the consumer from
 * the command to consume until the database holds one ledger row per message, and pauses it.
 * Fails unless every message was acked and had exactly one effect: as many new ledger rows as
 * messages and, for the arms that claim in PostgreSQL, a claim of each message id (none for the
 * plain arm, nor for lease mode on Redis, whose claims are in Redis).
 */
async function drainRound({ database, broker, consumer, queue, variant, label, round: r, messages }: DrainRound): Promise<Measurement> {
  const idPrefix = `${label}-${variant}-${r}-`;
  await broker.publish(
    queue,
    Array.from({ length: messages }, (_, n) => ({ messageId: `${idPrefix}${n}`, pattern: CREDIT_PATTERNS[variant], data: nthCredit(n) })),
  );
  const ready = await broker.readyMessages(queue);
  if (ready !== messages) {
    throw new Error(`queue ${queue} holds ${ready} messages where the round published ${messages}`);
  }
  const last = await lastLedgerRow(database);
  const started = performance.now();
  const cpuBefore = await consumer.consume(queue);
  await waitForEffects(database, last, messages);
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await consumer.pause();

  const left = await broker.readyMessages(queue);
  const effects = await ledgerRowsAfter(database, last);
  const [{ claims }] = await database.query<{ claims: string }>(
    `SELECT count(*) AS claims FROM processed_messages WHERE message_id LIKE '${idPrefix}%'`,
  );
  const expectedClaims = variant === 'idempotent' || variant === 'lease-postgres' ? messages : 0;
  if (left !== 0 || effects !== messages || Number(claims) !== expectedClaims) {
    throw new Error(
      `${variant} round ${r}: ${messages} messages left ${left} in the queue unacked, ${effects} ledger rows ` +
        `and ${claims} claims (expected 0, ${messages} and ${expectedClaims})`,
    );
  }
  return { throughput: messages / seconds, count: messages, seconds, appCpuMicros: (cpuAfter - cpuBefore) / messages };
}
