import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { openDatabase } from './database/database.js';

async function bootstrap(): Promise<void> {
  const database = await openDatabase();
  const app = await NestFactory.create(AppModule.register({ databaseUrl: database.url }));
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
