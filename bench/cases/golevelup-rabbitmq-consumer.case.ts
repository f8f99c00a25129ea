import { fileURLToPath } from 'node:url';
import { PREFETCH } from '../app/bench-app.module.js';
import type { TransportArm } from '../app/consumer-commands.js';
import { openBenchBroker, RABBITMQ_URL } from '../support/bench-broker.js';
import { type BenchConsumerProcess, startConsumerProcess } from '../support/bench-consumer.process.js';
import { type Backlog, drainBacklogs } from '../support/drain-backlog.js';
import { type BenchCase, type CaseReport, CaseSkipped, emptyReport, reportAgainstPlain } from './bench-case.js';

const GOLEVELUP_CONSUMER_ENTRY = fileURLToPath(new URL('../app/golevelup-consumer.main.js', import.meta.url));

/**
 * Case 15: the credit handler as an idempotent `@RabbitSubscribe` of `@golevelup/nestjs-rabbitmq`
 * (golevelup acks after the claim's commit) against the very same handler and transaction without
 * it, same prefetch as case 4, on the same RabbitMQ: each round fills the variant's queue first,
 * then lets its consumer drain it. Between rounds a consumer is cancelled, not closed, so a
 * delivery it never acked would stay with it unseen: at the end the consumers stop, which returns
 * any such message to its queue, and the case fails unless both queues are then empty.
 */
export const golevelupRabbitmqConsumer: BenchCase = {
  id: 15,
  title: 'RabbitMQ consumer through @golevelup/nestjs-rabbitmq',
  async run(context): Promise<CaseReport> {
    const broker = await openBenchBroker().catch((error: unknown) => {
      throw new CaseSkipped(`RabbitMQ is not reachable at ${RABBITMQ_URL} (${(error as Error).message}); set RABBITMQ_URL`);
    });
    const run = `bench-c15-${process.pid}-${Date.now().toString(36)}`;
    const consumers: BenchConsumerProcess[] = [];
    const queues: string[] = [];
    try {
      const backlog = async (variant: TransportArm): Promise<Backlog> => {
        const queue = `${run}-${variant}`;
        await broker.declareQueue(queue);
        queues.push(queue);
        // One process per variant, as in cases 1 and 4.
        const consumer = await startConsumerProcess(`the bench golevelup consumer (${variant})`, GOLEVELUP_CONSUMER_ENTRY, context.runtimes.headline, {
          BENCH_DATABASE_URL: context.database.url,
          BENCH_RABBITMQ_URL: broker.url,
          BENCH_GOLEVELUP_QUEUE: queue,
          BENCH_VARIANT: variant,
        });
        consumers.push(consumer);
        return {
          fill: async (messages) => {
            await broker.publish(queue, messages);
            const ready = await broker.readyMessages(queue);
            if (ready !== messages.length) {
              throw new Error(`queue ${queue} holds ${ready} messages where the round published ${messages.length}`);
            }
          },
          consume: () => consumer.consume(queue),
          pause: () => consumer.pause(),
          unsettled: () => broker.readyMessages(queue),
        };
      };
      const drained = await drainBacklogs(context, 'c15', { plain: await backlog('plain'), idempotent: await backlog('idempotent') });
      await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
      for (const queue of queues) {
        const unacked = await broker.readyMessages(queue);
        if (unacked !== 0) {
          throw new Error(`queue ${queue} got back ${unacked} messages when its consumer stopped: delivered in a round, never acked`);
        }
      }
      const report = emptyReport();
      const ratio = reportAgainstPlain(report, {
        variant: `prefetch ${PREFETCH}`,
        floorLabel: 'idempotent / plain messages per second',
        floor: 0.85,
        chartTitle: `15 · RabbitMQ consumer through golevelup · prefetch ${PREFETCH}`,
        unit: 'msg/s',
        plain: drained.medians.plain,
        idempotent: drained.medians.idempotent,
      });
      report.details = { prefetch: PREFETCH, persistent: false, ...drained, ratio };
      return report;
    } finally {
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      for (const queue of queues) {
        await broker.deleteQueue(queue);
      }
      await broker.close();
    }
  },
};
