import { Queue } from 'bullmq';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { PREFETCH } from '../app/bench-app.module.js';
import { PROCESSOR_QUEUES, type ProcessorArm } from '../app/bench-processors.js';
import type { ProcessorCommand, ProcessorReply } from '../app/processor.main.js';
import { forkBenchProcess } from '../support/bench-app.process.js';
import type { BenchDatabase } from '../support/bench-database.js';
import { REDIS_URL } from '../support/bench-redis.js';
import { lastLedgerRow, ledgerRowsAfter, waitForEffects } from '../support/ledger-effects.js';
import { nthCredit } from '../support/http-load.js';
import { type Arm, interleave, type Measurement, summarize, withDatabaseCpu } from '../support/measurement.js';
import { type BenchCase, type CaseReport, emptyReport, reportAgainstPlain } from './bench-case.js';

const PROCESSOR_ENTRY = fileURLToPath(new URL('../app/processor.main.js', import.meta.url));

/**
 * Case 12: the credit handler as an idempotent BullMQ processor (the claim on the job id, through
 * the provider path) against the very same handler in its own transaction, as many jobs at once
 * as case 4's prefetch. Each round fills the arm's queue first, then runs its worker: jobs per
 * second from the start of the worker until the database holds every job's effect.
 */
export const bullmqProcessor: BenchCase = {
  id: 12,
  title: 'BullMQ processor',
  async run({ settings, database, runtimes, log }): Promise<CaseReport> {
    const report = emptyReport();
    const prefix = `bench-bullmq-${process.pid}-${Date.now().toString(36)}`;
    const connection = createClient({ url: REDIS_URL });
    const queues = { plain: new Queue(PROCESSOR_QUEUES.plain, { connection, prefix }), idempotent: new Queue(PROCESSOR_QUEUES.idempotent, { connection, prefix }) };
    const processor = await forkBenchProcess(`the bench processor (${runtimes.headline.name})`, PROCESSOR_ENTRY, runtimes.headline, {
      BENCH_DATABASE_URL: database.url,
      BENCH_BULLMQ_PREFIX: prefix,
    });
    const ask = (command: ProcessorCommand) =>
      new Promise<number>((done, fail) => {
        processor.child.once('message', (reply: ProcessorReply) => ('error' in reply ? fail(new Error(reply.error)) : done(reply.cpuMicros)));
        processor.child.send(command);
      });
    const jobsPerRound = Math.round(settings.consumerMessages / settings.rounds);
    const warmupJobs = Math.round((jobsPerRound * settings.warmupSeconds) / settings.roundSeconds);
    try {
      const arm = (variant: ProcessorArm): Arm => ({
        name: variant,
        measure: (r) =>
          withDatabaseCpu(database, () => drainRound(database, queues[variant], variant, r, r === 0 ? warmupJobs : jobsPerRound, ask)),
      });
      const rounds = await interleave([arm('plain'), arm('idempotent')], { ...settings, log });
      const medians = { plain: summarize(rounds.plain), idempotent: summarize(rounds.idempotent) };
      const ratio = reportAgainstPlain(report, {
        variant: `concurrency ${PREFETCH}`,
        floorLabel: 'idempotent / plain jobs per second',
        floor: 0.85,
        chartTitle: `12 · BullMQ processor · concurrency ${PREFETCH}`,
        unit: 'jobs/s',
        plain: medians.plain,
        idempotent: medians.idempotent,
      });
      report.details = { concurrency: PREFETCH, jobsPerRound, warmupJobs, rounds, medians, ratio };
      return report;
    } finally {
      await processor.stop();
      for (const queue of Object.values(queues)) {
        await queue.obliterate({ force: true });
        await queue.close();
      }
      await connection.close();
    }
  },
};

/**
 * Adds the round's jobs (each a new job id), then times the worker from its start until the
 * database holds one ledger row per job, and pauses it. Fails unless every job completed with
 * exactly one effect, and (idempotent arm) a claim of each job id.
 */
async function drainRound(
  database: BenchDatabase,
  queue: Queue,
  variant: ProcessorArm,
  r: number,
  jobs: number,
  ask: (command: ProcessorCommand) => Promise<number>,
): Promise<Measurement> {
  const idPrefix = `c12-${variant}-${r}-`;
  await queue.addBulk(Array.from({ length: jobs }, (_, n) => ({ name: 'credit', data: nthCredit(n), opts: { jobId: `${idPrefix}${n}`, removeOnComplete: true } })));
  const last = await lastLedgerRow(database);
  const started = performance.now();
  const cpuBefore = await ask({ run: variant });
  await waitForEffects(database, last, jobs);
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await ask({ pause: variant });
  const counts = await queue.getJobCounts('wait', 'active', 'failed', 'delayed');
  const effects = await ledgerRowsAfter(database, last);
  const [{ claims }] = await database.query<{ claims: string }>(`SELECT count(*) AS claims FROM processed_messages WHERE message_id LIKE '${idPrefix}%'`);
  const expectedClaims = variant === 'idempotent' ? jobs : 0;
  const left = counts.wait + counts.active + counts.failed + counts.delayed;
  if (left !== 0 || effects !== jobs || Number(claims) !== expectedClaims) {
    throw new Error(`${variant} round ${r}: ${jobs} jobs left ${JSON.stringify(counts)}, ${effects} ledger rows and ${claims} claims (expected 0, ${jobs} and ${expectedClaims})`);
  }
  return { throughput: jobs / seconds, count: jobs, seconds, appCpuMicros: (cpuAfter - cpuBefore) / jobs };
}
