import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { env, outboxOptions, storeModules } from './outbox-app.js';

/**
 * A relay and nothing else, as the producers' outbox is sent beside producers that only write
 * (RELAY=none): the module with the same outbox options and a relay. It listens only for
 * `GET /ping` and `GET /stats` (what its relay published), for the test.
 */
const app = await NestFactory.create({ module: class RelayModule {}, imports: storeModules(await outboxOptions(true)) }, { logger: ['log', 'warn', 'error'] });
app.enableShutdownHooks();
await app.listen(Number(env.PORT), '127.0.0.1');
