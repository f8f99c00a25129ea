import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { countRoundTrips } from '../adoption/round-trips.js';
import { LayerAppModule } from './layer-app.module.js';
import { LAYERS, type LayerName } from './layers.js';

/** A service on the data layer `LAYER`, as a process of its own, so that a test can SIGKILL it mid-handler. */
async function main(): Promise<void> {
  const layer = process.env.LAYER as LayerName;
  if (!LAYERS.includes(layer)) {
    throw new Error(`LAYER must be one of ${LAYERS.join(', ')}; got ${layer}`);
  }
  const poolMax = process.env.POOL_MAX === undefined ? undefined : Number(process.env.POOL_MAX);
  const app = await NestFactory.create(LayerAppModule.register(layer, process.env.DATABASE_URL!, poolMax), { logger: ['log', 'warn', 'error'] });
  countRoundTrips(app);
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}

void main();
