import type { BenchLayer } from '../../test/apps/bench/layer-bench.module.js';
import { startLayerBenchApp } from '../../test/support/bench-processes.js';
import { createMariaDbDatabase } from '../../test/support/mariadb-database.js';
import { createLayerSchema } from '../../test/support/postgres-server.js';
import { createTestDatabase } from '../../test/support/test-database.js';
import { mariaDbSchemaSql } from 'nestjs-idempotent-consumer';
import { armFigure, type ArmInstructions, inParallel, measureArm, openInstructionCase, PARALLEL_ARMS, runningHttpArm, signedThousands } from '../support/instruction-arms.js';
import { type BenchCase, type CaseReport, checkFloor } from './bench-case.js';

/** The write in TypeORM's own transaction; the same write under `@IdempotentHandler()`, a new key each request; and its replay, one key. */
type Arm = 'plain' | 'first' | 'replay';
const ARMS: readonly Arm[] = ['plain', 'first', 'replay'];
/** The same handler on TypeORM's `postgres` and `mariadb` data sources. */
const DATABASES = [
  { name: 'PostgreSQL', layer: 'typeorm' },
  { name: 'MariaDB', layer: 'typeorm-mariadb' },
] as const satisfies readonly { name: string; layer: BenchLayer }[];

/**
 * Case 20: the same handler on MariaDB beside PostgreSQL, in instructions per request as case 16
 * measures them (`support/instruction-arms.ts`), and round trips. One TypeORM bench app per
 * database (`test/apps/bench/layer-bench.module.ts`, `typeorm` on PostgreSQL, `typeorm-mariadb` on
 * the MariaDB at MARIADB_URL, its pool created with `multipleStatements`), three arms each: the
 * credit in TypeORM's own transaction without the module, the same credit under
 * `@IdempotentHandler()` with a new key each request (a first delivery), and one key sent again
 * and again (a replay). The stores are made by the package's SQL in databases of the case's own.
 */
export const mariaDb: BenchCase = {
  id: 20,
  title: 'MariaDB beside PostgreSQL',
  async run(context): Promise<CaseReport> {
    const { callgrind, how, report } = await openInstructionCase(context, { platform: 'express', store: "the package's SQL for each database, in databases of the case's own" });
    const postgres = await createTestDatabase(context.database.url, 1);
    const mariadb = await createMariaDbDatabase('idempotency_bench', [
      mariaDbSchemaSql(),
      'CREATE TABLE layer_credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(255) NOT NULL, cents INT NOT NULL)',
    ]);
    try {
      await createLayerSchema(postgres.url);
      const urls: Record<BenchLayer, string> = { typeorm: postgres.url, 'typeorm-mariadb': mariadb.url } as Record<BenchLayer, string>;
      const items = DATABASES.flatMap(({ layer }) => ARMS.map((arm) => ({ layer, arm })));
      const counts = await inParallel(items, PARALLEL_ARMS, ({ layer, arm }) =>
        measureArm(context, how, callgrind, `${layer} ${arm}`, async (launch) => {
          const app = await startLayerBenchApp(layer, urls[layer], context.runtimes.headline, launch);
          const label = `c20-${layer}-${arm}-${launch.wrapper ? 'counted' : 'native'}-${Date.now().toString(36)}`;
          return runningHttpArm(app, how, { path: arm === 'plain' ? '/plain/credits' : '/idempotent/credits', label, replays: arm === 'replay' });
        }),
      );
      const of = (layer: BenchLayer, arm: Arm) => counts[items.findIndex((item) => item.layer === layer && item.arm === arm)];
      report.details.databases = Object.fromEntries(DATABASES.map(({ name, layer }) => [name, Object.fromEntries(ARMS.map((arm) => [arm, of(layer, arm)]))]));
      reportDatabases(report, of);
    } finally {
      await callgrind.close();
      await postgres.drop();
      await mariadb.drop();
    }
    return report;
  },
};

function reportDatabases(report: CaseReport, of: (layer: BenchLayer, arm: Arm) => ArmInstructions): void {
  const trips = (arm: ArmInstructions) => (arm.roundTrips === undefined ? 'round trips not counted' : `${arm.roundTrips} round trips`);
  for (const { name, layer } of DATABASES) {
    const plain = of(layer, 'plain');
    for (const arm of ARMS) {
      const measured = of(layer, arm);
      report.rows.push({ variant: `${name}, ${arm}`, appCpuMicros: measured.cpuMicros, figure: `${armFigure(measured, arm === 'plain' ? undefined : plain)}; ${trips(measured)}` });
    }
    const first = of(layer, 'first');
    if (plain.roundTrips !== undefined && first.roundTrips !== undefined) {
      // The claim travels with BEGIN and its record with COMMIT on both databases (MariaDB: with multipleStatements).
      report.floors.push(checkFloor(`${name}: round trips ours adds per first delivery`, first.roundTrips - plain.roundTrips, 'at most', 0));
    }
  }
  const added = (layer: BenchLayer, arm: Arm) => of(layer, arm).median - of(layer, 'plain').median;
  report.chart.push({
    title: '20 · instructions per request · MariaDB beside PostgreSQL (TypeORM)',
    unit: 'k instructions',
    bars: DATABASES.flatMap(({ name, layer }) => ARMS.map((arm, series) => ({ label: `${name}, ${arm}`, value: of(layer, arm).median / 1000, series }))),
    note: DATABASES.map(({ name, layer }) => `${name}: first − plain ${signedThousands(added(layer, 'first'))}, replay − plain ${signedThousands(added(layer, 'replay'))}`).join('; '),
  });
}
