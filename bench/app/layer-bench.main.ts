// The bench app of one data layer as a child process of the runner (case 17): `fork()`ed with
// BENCH_DATABASE_URL and BENCH_LAYER (pg, drizzle, kysely, prisma, mikro-orm or typeorm), it counts the queries it
// sends, listens on a free port and reports it over IPC, as the bench app does. Nest's logger is off.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { isBenchLayer, LayerBenchModule } from './layer-bench.module.js';
import { countRoundTrips } from './round-trips.js';

async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const layer = process.env.BENCH_LAYER;
  if (!databaseUrl || !isBenchLayer(layer) || !process.send) {
    throw new Error('the data-layer bench app is started by the bench runner (npm run bench), not by hand');
  }
  countRoundTrips();
  const app = await NestFactory.create(LayerBenchModule.register(layer, databaseUrl), { logger: false });
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer();
  if (process.env.BENCH_UNDER_TOOL === '1') {
    // Under valgrind a pause between windows outlasts Node's 5 s keep-alive (see main.ts).
    server.keepAliveTimeout = 600_000;
  }
  const { port } = server.address() as AddressInfo;
  const stop = () => void app.close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
  process.send({ port });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
