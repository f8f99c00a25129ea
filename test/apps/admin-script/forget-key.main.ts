import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyAdmin, IdempotencyAdminModule, IdempotencyPurgeService } from 'nestjs-idempotent-consumer';
import { idempotencyOptions } from './worker.options.js';

/** The guide's incident script, on the worker's options: its own data source and the admin module alone. */
@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } }),
    IdempotencyAdminModule.forRoot(idempotencyOptions),
  ],
})
class AdminScriptModule {}

const [consumer, key, scope, reason] = process.argv.slice(2);
const app = await NestFactory.createApplicationContext(AdminScriptModule, { logger: ['log', 'warn', 'error'] });
try {
  const admin = app.get(IdempotencyAdmin);
  const print = (what: string, result: unknown) => console.log(JSON.stringify({ [what]: result }));
  print('lookup', await admin.lookup({ consumer, key, scope: scope || undefined, actor: 'ops' }));
  print('list', await admin.list({ consumer, actor: 'ops' }));
  print('forget', await admin.forget({ consumer, key, scope: scope || undefined, reason, actor: 'ops' }));
  // The suite's probe: the context holds no purge to schedule.
  print('purgeService', (() => {
    try {
      app.get(IdempotencyPurgeService, { strict: false });
      return true;
    } catch {
      return false;
    }
  })());
} finally {
  await app.close();
}
