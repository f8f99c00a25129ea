import { fileURLToPath } from 'node:url';
import { PREFETCH } from '../app/bench-app.module.js';
import { JETSTREAM_SUBJECTS } from '../app/bench-jetstream.controllers.js';
import type { TransportArm } from '../app/consumer-commands.js';
import { openBenchJetStream, NATS_URL } from '../support/bench-jetstream.js';
import { type BenchConsumerProcess, startConsumerProcess } from '../support/bench-consumer.process.js';
import { type Backlog, drainBacklogs } from '../support/drain-backlog.js';
import { type BenchCase, type CaseReport, CaseSkipped, emptyReport, reportAgainstPlain } from './bench-case.js';

const JETSTREAM_CONSUMER_ENTRY = fileURLToPath(new URL('../app/jetstream-consumer.main.js', import.meta.url));

/** The stream of each variant's subject, names of the bench's own. */
const JETSTREAM_STREAMS: Record<TransportArm, string> = {
  plain: 'IDEM_BENCH_JETSTREAM_PLAIN',
  idempotent: 'IDEM_BENCH_JETSTREAM_IDEMPOTENT',
};

/**
 * Case 12: the credit handler on a durable JetStream consumer of
 * `@nestjs-plugins/nestjs-nats-jetstream-transport` as an idempotent `@EventPattern` (the module
 * acks) against the very same handler and transaction without it (acking itself), at most
 * `maxAckPending` 20 unacked messages each, as case 4 drains RabbitMQ: each round fills the
 * variant's stream first, then lets its consumer drain it.
 */
export const natsJetStreamConsumer: BenchCase = {
  id: 13,
  title: 'NATS JetStream consumer',
  async run(context): Promise<CaseReport> {
    const jetStream = await openBenchJetStream().catch((error: unknown) => {
      throw new CaseSkipped(`NATS with JetStream is not reachable at ${NATS_URL} (${(error as Error).message}); set NATS_URL`);
    });
    // A durable consumer per run and variant: the plugin names it `<durable>-<subject>`.
    const durable = `idem-bench-c12-${process.pid}-${Date.now().toString(36)}`;
    const consumers: BenchConsumerProcess[] = [];
    const streams: string[] = [];
    try {
      const backlog = async (variant: TransportArm): Promise<Backlog> => {
        const stream = JETSTREAM_STREAMS[variant];
        const subject = JETSTREAM_SUBJECTS[variant];
        await jetStream.createStream(stream, subject);
        streams.push(stream);
        // One process per variant, as in cases 1 and 4.
        const consumer = await startConsumerProcess(`the bench JetStream consumer (${variant})`, JETSTREAM_CONSUMER_ENTRY, context.runtimes.headline, {
          BENCH_DATABASE_URL: context.database.url,
          BENCH_NATS_URL: jetStream.url,
          BENCH_VARIANT: variant,
        });
        consumers.push(consumer);
        return {
          fill: async (messages) => {
            await jetStream.publish(subject, messages);
            const held = await jetStream.messages(stream);
            if (held !== messages.length) {
              throw new Error(`stream ${stream} holds ${held} messages where the round published ${messages.length}`);
            }
          },
          consume: () => consumer.consume(durable),
          pause: () => consumer.pause(),
          unsettled: () => jetStream.messages(stream),
        };
      };
      const drained = await drainBacklogs(context, 'c12', { plain: await backlog('plain'), idempotent: await backlog('idempotent') });
      const report = emptyReport();
      const ratio = reportAgainstPlain(report, {
        variant: `maxAckPending ${PREFETCH}`,
        floorLabel: 'idempotent / plain messages per second',
        floor: 0.85,
        chartTitle: `12 · NATS JetStream consumer · maxAckPending ${PREFETCH}`,
        unit: 'msg/s',
        plain: drained.medians.plain,
        idempotent: drained.medians.idempotent,
      });
      report.details = { maxAckPending: PREFETCH, storage: 'memory', ...drained, ratio };
      return report;
    } finally {
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      for (const stream of streams) {
        await jetStream.deleteStream(stream);
      }
      await jetStream.close();
    }
  },
};
