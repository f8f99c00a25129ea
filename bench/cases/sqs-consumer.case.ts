import { fileURLToPath } from 'node:url';
import { SQS_BATCH_SIZE } from '../app/bench-sqs.handlers.js';
import type { TransportArm } from '../app/consumer-commands.js';
import { type BenchConsumerProcess, startConsumerProcess } from '../support/bench-consumer.process.js';
import { startBenchFauxqs } from '../support/bench-fauxqs.js';
import { type Backlog, drainBacklogs } from '../support/drain-backlog.js';
import { type BenchCase, type CaseReport, CaseSkipped, emptyReport, reportAgainstPlain } from './bench-case.js';

const SQS_CONSUMER_ENTRY = fileURLToPath(new URL('../app/sqs-consumer.main.js', import.meta.url));

/**
 * Case 13: the credit handler as an idempotent `@SqsMessageHandler` of `@ssut/nestjs-sqs` (the
 * message is deleted after the claim's commit) against the very same handler and transaction
 * without it, on the fauxqs SQS emulator the case starts, receiving batches of 10, as case 4 drains
 * RabbitMQ: each round fills the variant's queue first, then lets its consumer drain it.
 */
export const sqsConsumer: BenchCase = {
  id: 14,
  title: 'SQS consumer (fauxqs)',
  async run(context): Promise<CaseReport> {
    const fauxqs = await startBenchFauxqs().catch((error: unknown) => {
      throw new CaseSkipped(`the SQS emulator fauxqs did not start (${(error as Error).message})`);
    });
    const consumers: BenchConsumerProcess[] = [];
    try {
      const run = `idem-bench-c13-${process.pid}-${Date.now().toString(36)}`;
      const backlog = async (variant: TransportArm): Promise<Backlog> => {
        const queueUrl = await fauxqs.createQueue(`${run}-${variant}`);
        // One process per variant, as in cases 1 and 4.
        const consumer = await startConsumerProcess(`the bench SQS consumer (${variant})`, SQS_CONSUMER_ENTRY, context.runtimes.headline, {
          BENCH_DATABASE_URL: context.database.url,
          BENCH_SQS_ENDPOINT: fauxqs.endpoint,
          BENCH_SQS_QUEUE_URL: queueUrl,
          BENCH_VARIANT: variant,
        });
        consumers.push(consumer);
        return {
          fill: async (messages) => {
            await fauxqs.send(queueUrl, messages);
            const { visible, inFlight } = await fauxqs.depth(queueUrl);
            if (visible !== messages.length || inFlight !== 0) {
              throw new Error(`queue ${queueUrl} holds ${visible} visible and ${inFlight} received messages where the round sent ${messages.length}`);
            }
          },
          consume: () => consumer.consume(queueUrl),
          pause: () => consumer.pause(),
          unsettled: async () => {
            const { visible, inFlight } = await fauxqs.depth(queueUrl);
            return visible + inFlight;
          },
        };
      };
      const drained = await drainBacklogs(context, 'c13', { plain: await backlog('plain'), idempotent: await backlog('idempotent') });
      const report = emptyReport();
      const ratio = reportAgainstPlain(report, {
        variant: `batches of ${SQS_BATCH_SIZE}`,
        floorLabel: 'idempotent / plain messages per second',
        floor: 0.85,
        chartTitle: `13 · SQS consumer (fauxqs) · batches of ${SQS_BATCH_SIZE}`,
        unit: 'msg/s',
        plain: drained.medians.plain,
        idempotent: drained.medians.idempotent,
      });
      report.details = { batchSize: SQS_BATCH_SIZE, broker: 'fauxqs (an SQS emulator), on the runner', ...drained, ratio };
      return report;
    } finally {
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await fauxqs.stop();
    }
  },
};
