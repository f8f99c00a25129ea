import { PREFETCH } from '../../test/apps/bench/bench-app.module.js';
import { PLATFORMS } from '../../test/support/bench-processes.js';
import { type BenchCase, type CaseReport, emptyReport, reportVariantsAgainstPlain } from './bench-case.js';
import { measureFirstDeliveries } from './http-first-deliveries.case.js';
import { drainRow, RABBITMQ } from './consumers.case.js';

/**
 * Case 8: the credit handler in lease mode, its claim in PostgreSQL and in Redis, against the very
 * same handler without the module: HTTP first deliveries on Express and Fastify (as case 1), and
 * the RabbitMQ consumer (as case 4). In lease mode the work runs in a transaction of its own, as
 * the plain handler's does, between the claim and its completion.
 */
export const leaseMode: BenchCase = {
  id: 8,
  title: 'Lease mode, on PostgreSQL and on Redis',
  async run(context): Promise<CaseReport> {
    const report = emptyReport();
    for (const platform of PLATFORMS) {
      const { rounds, medians } = await measureFirstDeliveries(context, platform, 'c8', ['plain', 'lease-postgres', 'lease-redis']);
      const ratios = reportVariantsAgainstPlain(report, {
        variant: platform,
        chartTitle: `8 · lease mode · first deliveries · ${platform}`,
        unit: 'req/s',
        plain: medians.plain,
        others: { 'lease, postgres': medians['lease-postgres'], 'lease, redis': medians['lease-redis'] },
      });
      report.details[platform] = { rounds, medians, ratios };
    }
    const drained = await drainRow(context, 'c8', RABBITMQ, ['plain', 'lease-postgres', 'lease-redis']);
    const ratios = reportVariantsAgainstPlain(report, {
      variant: `RabbitMQ, prefetch ${PREFETCH}`,
      chartTitle: `8 · lease mode · RabbitMQ consumer · prefetch ${PREFETCH}`,
      unit: 'msg/s',
      plain: drained.medians.plain,
      others: { 'lease, postgres': drained.medians['lease-postgres'], 'lease, redis': drained.medians['lease-redis'] },
    });
    report.details.rabbitmq = { ...RABBITMQ.details, ...drained, ratios };
    return report;
  },
};
