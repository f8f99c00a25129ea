import { BENCH_LAYERS, type BenchLayer as AnyBenchLayer, isMariaDbLayer, type PostgresBenchLayer as BenchLayer } from '../../test/apps/bench/layer-bench.module.js';
import type { ProcessLaunch } from '../../test/support/bench-processes.js';
import { createLayerSchema } from '../../test/support/postgres-server.js';
import { createTestDatabase } from '../../test/support/test-database.js';
import type { InstructionWindows } from '../support/callgrind.js';
import { addedHalfSpread, armFigure, type ArmInstructions, inParallel, measureArm, openInstructionCase, PARALLEL_ARMS, type RunningArm, runningHttpArm, signedThousands } from '../support/instruction-arms.js';
import { startLayerBenchApp } from '../../test/support/bench-processes.js';
import { type BenchCase, type BenchContext, type CaseReport, checkFloor } from './bench-case.js';

/** The arms of each layer: the write in the layer's own transaction, and the same write under `@IdempotentHandler()`. */
type LayerArm = 'plain' | 'idempotent';
const LAYER_ARMS: readonly LayerArm[] = ['plain', 'idempotent'];

/**
 * Round trips the claim may add to a layer's write in a transaction of its own. None where the
 * layer's write travels between the claim's `BEGIN` and the record's `COMMIT` as it is. MikroORM's
 * `flush()` always opens a transaction of its own, which inside the claim's becomes a savepoint:
 * `SAVEPOINT` and `RELEASE SAVEPOINT`, two more than the plain arm, whose flush runs inside
 * `em.transactional()` and opens none (as the contract suite expects, `test/data-layers.e2e-spec.ts`).
 */
const ADDED_ROUND_TRIPS: Record<BenchLayer, number> = { pg: 0, drizzle: 0, kysely: 0, prisma: 0, 'mikro-orm': 2, typeorm: 0 };

/** What the claim adds on one layer: instructions (idempotent − plain, medians) and round trips. */
export interface LayerCost {
  readonly plain: ArmInstructions;
  readonly idempotent: ArmInstructions;
  /** idempotent − plain, medians, per request. */
  readonly added: number;
  /** Half the plain arm's range plus half the idempotent arm's: how far `added` can move within the windows. */
  readonly addedHalfSpread: number;
  /** Round trips per request of each arm, counted at `pg.Client.prototype.query` in the app. */
  readonly roundTrips: { readonly plain: number | undefined; readonly idempotent: number | undefined };
}

/**
 * Case 17: what the claim costs on each data layer, in instructions per first delivery, measured
 * as case 16 measures (`support/instruction-arms.ts`: callgrind in the app process alone, Node 24
 * with `--single-threaded --predictable-gc-schedule`, warm-up windows until two agree, then
 * windows; the CPU time per request of the same arm run natively). Per layer (plain `pg`,
 * Drizzle, Kysely and Prisma on a pg Pool joined by `PgPoolDataLayer`, MikroORM joined by
 * `MikroOrmDataLayer`, TypeORM), the layer's bench app (`test/apps/bench/layer-bench.module.ts`) runs two
 * arms, each in a process of its own: one `INSERT` in a transaction of the layer's own, without the
 * module, and the same `INSERT` in an `@IdempotentHandler()` with a new `Idempotency-Key` each
 * request. The app counts the queries it sends: on every layer but MikroORM the idempotent arm
 * should send as many as the plain one (the claim travels with `BEGIN`, its record with `COMMIT`);
 * on MikroORM two more (`ADDED_ROUND_TRIPS`). All layers write one database of the case's own, its
 * store made by the package's `schemaSql()`.
 */
export const dataLayers: BenchCase = {
  id: 17,
  title: 'Cost per data layer',
  async run(context): Promise<CaseReport> {
    const { callgrind, how, report } = await openInstructionCase(context, { platform: 'express', store: "the package's schemaSql(), in a database of the case's own" });
    // A database of the case's own on the bench database's server.
    const database = await createTestDatabase(context.database.url, 1);
    try {
      await createLayerSchema(database.url);
      const items = BENCH_LAYERS.flatMap((layer) => LAYER_ARMS.map((arm) => ({ layer, arm })));
      const counts = await inParallel(items, PARALLEL_ARMS, ({ layer, arm }) =>
        measureArm(context, how, callgrind, `${layer} ${arm}`, (launch) => layerArm(context, how, database.url, layer, arm, launch)),
      );
      const arm = (layer: BenchLayer, name: LayerArm) => counts[items.findIndex((item) => item.layer === layer && item.arm === name)];
      const costs = Object.fromEntries(BENCH_LAYERS.map((layer) => [layer, layerCost(arm(layer, 'plain'), arm(layer, 'idempotent'))])) as Record<BenchLayer, LayerCost>;
      report.details.layers = costs;
      reportLayers(report, costs);
    } finally {
      await callgrind.close();
      await database.drop();
    }
    return report;
  },
};

/** The bench app of `layer` on `databaseUrl`, its requests to `arm`'s route, each a new key (`replay`: one key, again and again, to the idempotent route). */
export async function layerArm(
  { runtimes }: BenchContext,
  how: InstructionWindows,
  databaseUrl: string,
  layer: AnyBenchLayer,
  arm: LayerArm | 'replay',
  launch: ProcessLaunch,
): Promise<RunningArm> {
  const app = await startLayerBenchApp(layer, databaseUrl, runtimes.headline, launch);
  const label = `c${isMariaDbLayer(layer) ? 20 : 17}-${layer}-${arm}-${launch.wrapper ? 'counted' : 'native'}-${Date.now().toString(36)}`;
  return runningHttpArm(app, how, { path: `/${arm === 'plain' ? 'plain' : 'idempotent'}/credits`, label, replays: arm === 'replay' });
}

function layerCost(plain: ArmInstructions, idempotent: ArmInstructions): LayerCost {
  return {
    plain,
    idempotent,
    added: idempotent.median - plain.median,
    addedHalfSpread: addedHalfSpread(idempotent, plain),
    roundTrips: { plain: plain.roundTrips, idempotent: idempotent.roundTrips },
  };
}

/** The rows, the round-trip checks and the chart group of the layers. */
function reportLayers(report: CaseReport, costs: Record<BenchLayer, LayerCost>): void {
  const trips = (value: number | undefined) => (value === undefined ? 'round trips not counted' : `${value} round trips`);
  for (const layer of BENCH_LAYERS) {
    const { plain, idempotent, roundTrips } = costs[layer];
    report.rows.push(
      { variant: `${layer}, plain`, appCpuMicros: plain.cpuMicros, figure: `${armFigure(plain)}; ${trips(roundTrips.plain)}` },
      { variant: `${layer}, idempotent`, appCpuMicros: idempotent.cpuMicros, figure: `${armFigure(idempotent, plain)}; ${trips(roundTrips.idempotent)}` },
    );
    if (roundTrips.plain !== undefined && roundTrips.idempotent !== undefined) {
      report.floors.push(checkFloor(`${layer}: round trips ours adds per first delivery`, roundTrips.idempotent - roundTrips.plain, 'at most', ADDED_ROUND_TRIPS[layer]));
    }
  }
  const expectedTrips = BENCH_LAYERS.every((layer) => {
    const { plain, idempotent } = costs[layer].roundTrips;
    return plain !== undefined && idempotent !== undefined && idempotent - plain <= ADDED_ROUND_TRIPS[layer];
  });
  report.chart.push({
    title: '17 · instructions per first delivery · by data layer',
    unit: 'k instructions',
    bars: BENCH_LAYERS.flatMap((layer) => [
      { label: `${layer}, plain`, value: costs[layer].plain.median / 1000, series: 0 },
      { label: `${layer}, ours`, value: costs[layer].idempotent.median / 1000, series: 1 },
    ]),
    note:
      `ours − plain: ${BENCH_LAYERS.map((layer) => `${layer} ${signedThousands(costs[layer].added)}`).join(', ')}; ` +
      `round trips added: ${BENCH_LAYERS.map((layer) => `${layer} ${addedTrips(costs[layer])}`).join(', ')} (${expectedTrips ? 'as expected' : 'NOT as expected'})`,
    met: expectedTrips,
  });
}

/** `0`, `+2`: the round trips ours adds per request on a layer, or `?` where they were not counted. */
function addedTrips({ roundTrips: { plain, idempotent } }: LayerCost): string {
  if (plain === undefined || idempotent === undefined) return '?';
  const added = idempotent - plain;
  return added > 0 ? `+${added}` : `${added}`;
}
