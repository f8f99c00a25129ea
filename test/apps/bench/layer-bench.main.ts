// The bench app of one data layer as a child process of the runner (case 17): `fork()`ed with
// BENCH_DATABASE_URL and BENCH_LAYER (pg, drizzle, kysely, prisma, mikro-orm or typeorm), it counts the queries it
// sends, listens on a free port and reports it over IPC, as the bench app does. Nest's logger is off.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { isBenchLayer, LayerBenchModule } from './layer-bench.module.js';
import { countRoundTrips } from './round-trips.js';
import { serveToRunner } from './serve-to-runner.js';

async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const layer = process.env.BENCH_LAYER;
  if (!databaseUrl || !isBenchLayer(layer) || !process.send) {
    throw new Error('the data-layer bench app is started by the bench runner (npm run bench), not by hand');
  }
  countRoundTrips();
  const app = await NestFactory.create(LayerBenchModule.register(layer, databaseUrl), { logger: false });
  await serveToRunner(app);
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
