import type { ConsumerArm } from '../../test/apps/bench/bench-messages.controller.js';
import type { BenchContext } from '../cases/bench-case.js';
import type { BenchDatabase } from '../../test/support/bench-database.js';
import type { CreditRequest } from '../../apps/demo-api/src/credits/credit-request.js';
import { until } from '../../test/support/test-database.js';
import { nthCredit } from './http-load.js';
import { lastLedgerRow, ledgerRowsAfter, waitForEffects } from '../../test/support/ledger.js';
import { type Arm, interleave, type Measurement, type Summary, summarize, withDatabaseCpu } from './measurement.js';

/** A round fails when the broker still holds messages this long after their effects are in. */
const SETTLE_TIMEOUT_MS = 10_000;

/** A message of a round: a new id, and one of the HTTP cases' credits. */
export interface BacklogMessage {
  readonly messageId: string;
  readonly data: CreditRequest;
}

/** A variant's backlog on a broker, and the consumer process that drains it. */
export interface Backlog {
  /** Puts `messages` on the broker; resolves once the broker has taken every one. */
  fill(messages: readonly BacklogMessage[]): Promise<void>;
  /** Starts the consumer on the backlog; resolves once it is on it, with its CPU time (µs) from before. */
  consume(): Promise<number>;
  /** Stops the consumer; resolves with its CPU time (µs) from before it stopped. */
  pause(): Promise<number>;
  /** The messages the broker still holds: not yet acknowledged (or deleted), delivered or not. */
  unsettled(): Promise<number>;
  /** Stops the consumer for good; a delivery it never settled goes back to (or stays in) the backlog. */
  stop(): Promise<void>;
}

/** What `drainBacklogs` measured: the rounds and medians of each variant. */
export interface DrainedBacklogs<Variant extends ConsumerArm> {
  messagesPerRound: number;
  warmupMessages: number;
  rounds: Record<string, Measurement[]>;
  medians: Record<Variant, Summary>;
}

/**
 * Measures each variant's consumer on its backlog, interleaved as case 4 does: each round fills
 * the variant's backlog first, then times its consumer from the command to consume until the
 * database holds every message's effect. `label` names the rounds' message ids.
 */
export async function drainBacklogs<Variant extends ConsumerArm>(
  { settings, database, log }: BenchContext,
  label: string,
  backlogs: Record<Variant, Backlog>,
): Promise<DrainedBacklogs<Variant>> {
  const messagesPerRound = Math.round(settings.consumerMessages / settings.rounds);
  const warmupMessages = Math.round((messagesPerRound * settings.warmupSeconds) / settings.roundSeconds);
  const variants = Object.keys(backlogs) as Variant[];
  const arms: Arm[] = variants.map((variant) => ({
    name: variant,
    measure: (r) =>
      withDatabaseCpu(database, () =>
        drainRound(database, backlogs[variant], variant, `${label}-${variant}-${r}-`, r === 0 ? warmupMessages : messagesPerRound),
      ),
  }));
  const rounds = await interleave(arms, { ...settings, log });
  const medians = Object.fromEntries(variants.map((variant) => [variant, summarize(rounds[variant])])) as Record<Variant, Summary>;
  return { messagesPerRound, warmupMessages, rounds, medians };
}

/**
 * Fills the backlog with `messages` messages (ids `idPrefix<n>`), fails unless the broker then holds
 * exactly those, then times the consumer from the
 * command to consume until the database holds one new ledger row per message. Waits, untimed,
 * until the broker has every message settled before it pauses the consumer, so that no ack or
 * delete is cut off. Fails unless every message was settled and had exactly one effect: as many
 * new ledger rows as messages and, for the variants that claim in PostgreSQL, as many new claims
 * (none for plain, nor for lease mode on Redis, whose claims are in Redis).
 */
async function drainRound(database: BenchDatabase, backlog: Backlog, variant: ConsumerArm, idPrefix: string, messages: number): Promise<Measurement> {
  await backlog.fill(Array.from({ length: messages }, (_, n) => ({ messageId: `${idPrefix}${n}`, data: nthCredit(n) })));
  const held = await backlog.unsettled();
  if (held !== messages) {
    throw new Error(`${variant} round ${idPrefix}: the broker holds ${held} messages where the round put ${messages}`);
  }
  const last = await lastLedgerRow(database);
  const claimsBefore = await claimCount(database);
  const started = performance.now();
  const cpuBefore = await backlog.consume();
  await waitForEffects(database, last, messages);
  const seconds = (performance.now() - started) / 1000;
  const left = await settled(backlog);
  const cpuAfter = await backlog.pause();

  const effects = await ledgerRowsAfter(database, last);
  const claims = (await claimCount(database)) - claimsBefore;
  const expectedClaims = variant === 'idempotent' || variant === 'lease-postgres' ? messages : 0;
  if (left !== 0 || effects !== messages || claims !== expectedClaims) {
    throw new Error(
      `${variant} round ${idPrefix}: ${messages} messages left ${left} unsettled on the broker, ${effects} ledger rows ` +
        `and ${claims} claims (expected 0, ${messages} and ${expectedClaims})`,
    );
  }
  return { throughput: messages / seconds, count: messages, seconds, appCpuMicros: (cpuAfter - cpuBefore) / messages };
}

/** Polls the broker until it holds none of the backlog's messages, for up to SETTLE_TIMEOUT_MS; the messages still held. */
async function settled(backlog: Backlog): Promise<number> {
  await until(async () => (await backlog.unsettled()) === 0, 'the broker holds none of the round', SETTLE_TIMEOUT_MS).catch(() => undefined);
  return backlog.unsettled();
}

/** The claims in the store: only one arm runs at a time, so a round's new claims are its own. */
async function claimCount(database: BenchDatabase): Promise<number> {
  return Number((await database.query<{ n: string }>('SELECT count(*) AS n FROM processed_messages'))[0].n);
}
