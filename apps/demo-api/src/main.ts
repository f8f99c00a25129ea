import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { openDatabase } from './database/database.js';
import { consumeCredits, creditQueueFromEnvironment } from './messaging/rabbitmq.js';

async function bootstrap(): Promise<void> {
  const database = await openDatabase();
  const app = await NestFactory.create(AppModule.register({ databaseUrl: database.url }));
  // Initialised first, so the idempotency module is ready (and has checked the consumer) before a message arrives.
  await app.init();
  if (process.env.RABBITMQ_URL) {
    const queue = creditQueueFromEnvironment(process.env);
    await consumeCredits(app, process.env.RABBITMQ_URL, queue);
    Logger.log(`Consuming credit.grant from RabbitMQ ${queue.type} queue '${queue.name}'`, 'DemoApi');
  }
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  Logger.log(`Credit service listening on http://127.0.0.1:${port}`, 'DemoApi');
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void app
        .close()
        .then(() => database.close())
        .finally(() => process.exit(0));
    });
  }
}

void bootstrap();
