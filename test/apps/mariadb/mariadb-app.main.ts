import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import { consumeCredits } from '../../../apps/demo-api/src/messaging/rabbitmq.js';
import { mariaDbAppModule } from './mariadb-app.module.js';

/**
 * The MariaDB app on MARIADB_URL as a process of its own, so that a test can SIGKILL it
 * mid-handler; with RABBITMQ_QUEUE, it consumes that queue of RABBITMQ_URL as the demo does.
 */
const env = process.env;
const pool = mysql.createPool({ uri: env.MARIADB_URL!, connectionLimit: 4, multipleStatements: true });
const app = await NestFactory.create(mariaDbAppModule(pool), { logger: ['log', 'warn', 'error'] });
app.enableShutdownHooks();
// Consuming before it listens: ready, for the test that waits for it, once its queue exists.
if (env.RABBITMQ_QUEUE) {
  await consumeCredits(app, env.RABBITMQ_URL!, { name: env.RABBITMQ_QUEUE, type: 'classic' });
}
await app.listen(Number(env.PORT), '127.0.0.1');
