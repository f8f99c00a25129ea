import type { BenchLayer } from '../../test/apps/bench/layer-bench.module.js';
import { createMariaDbDatabase } from '../../test/support/mariadb-database.js';
import { createLayerSchema } from '../../test/support/postgres-server.js';
import { createTestDatabase } from '../../test/support/test-database.js';
import { mariaDbSchemaSql } from 'nestjs-idempotent-consumer';
import { armFigure, inParallel, measureArm, openInstructionCase, PARALLEL_ARMS, signedThousands } from '../support/instruction-arms.js';
import { type BenchCase, type CaseReport, checkFloor } from './bench-case.js';
import { layerArm } from './data-layers.case.js';

const ARMS = ['plain', 'first', 'replay'] as const;
const DATABASES = [
  { name: 'PostgreSQL', layer: 'typeorm' },
  { name: 'MariaDB', layer: 'typeorm-mariadb' },
] as const satisfies readonly { name: string; layer: BenchLayer }[];

/**
 * Case 20: the same TypeORM handler on MariaDB (MARIADB_URL, a pool with `multipleStatements`)
 * beside PostgreSQL, measured as case 17 measures a layer (the layer bench app, callgrind), three
 * arms each: the credit in TypeORM's own transaction (`plain`), under `@IdempotentHandler()` with a
 * new key each request (`first`), and one key again and again (`replay`). Round trips are counted
 * at node-postgres's and mysql2's query. Each store is made by the package's SQL in a database of the case's own.
 */
export const mariaDb: BenchCase = {
  id: 20,
  title: 'MariaDB beside PostgreSQL',
  async run(context): Promise<CaseReport> {
    const { callgrind, how, report } = await openInstructionCase(context, { platform: 'express', store: "the package's SQL for each database, in databases of the case's own" });
    const postgres = await createTestDatabase(context.database.url, 1);
    const table = 'CREATE TABLE layer_credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(255) NOT NULL, cents INT NOT NULL)';
    const mariadb = await createMariaDbDatabase('idempotency_bench', [mariaDbSchemaSql(), table]);
    try {
      await createLayerSchema(postgres.url);
      const items = DATABASES.flatMap(({ layer }) => ARMS.map((arm) => ({ layer, arm, url: layer === 'typeorm' ? postgres.url : mariadb.url })));
      const counts = await inParallel(items, PARALLEL_ARMS, ({ layer, arm, url }) =>
        measureArm(context, how, callgrind, `${layer} ${arm}`, (launch) => layerArm(context, how, url, layer, arm === 'first' ? 'idempotent' : arm, launch)),
      );
      const of = (layer: BenchLayer, arm: (typeof ARMS)[number]) => counts[items.findIndex((item) => item.layer === layer && item.arm === arm)];
      report.details.databases = Object.fromEntries(DATABASES.map(({ name, layer }) => [name, Object.fromEntries(ARMS.map((arm) => [arm, of(layer, arm)]))]));
      for (const { name, layer } of DATABASES) {
        const [plain, first] = [of(layer, 'plain'), of(layer, 'first')];
        for (const arm of ARMS) {
          const measured = of(layer, arm);
          report.rows.push({ variant: `${name}, ${arm}`, appCpuMicros: measured.cpuMicros, figure: `${armFigure(measured, arm === 'plain' ? undefined : plain)}; ${measured.roundTrips ?? '?'} round trips` });
        }
        // The claim travels with BEGIN and its record with COMMIT on both databases.
        report.floors.push(checkFloor(`${name}: round trips ours adds per first delivery`, (first.roundTrips ?? NaN) - (plain.roundTrips ?? NaN), 'at most', 0));
      }
      const added = (layer: BenchLayer, arm: (typeof ARMS)[number]) => signedThousands(of(layer, arm).median - of(layer, 'plain').median);
      report.chart.push({
        title: '20 · instructions per request · MariaDB beside PostgreSQL (TypeORM)',
        unit: 'k instructions',
        bars: DATABASES.flatMap(({ name, layer }) => ARMS.map((arm, series) => ({ label: `${name}, ${arm}`, value: of(layer, arm).median / 1000, series }))),
        note: DATABASES.map(({ name, layer }) => `${name}: first − plain ${added(layer, 'first')}, replay − plain ${added(layer, 'replay')}`).join('; '),
      });
    } finally {
      await callgrind.close();
      await postgres.drop();
      await mariadb.drop();
    }
    return report;
  },
};
