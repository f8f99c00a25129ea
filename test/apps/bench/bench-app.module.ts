import { type DynamicModule, Module } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyModule, type LeaseStore } from 'nestjs-idempotent-consumer';
import { LedgerEntry } from '../../../apps/demo-api/src/credits/ledger-entry.entity.js';
import { PeerModule } from './peer.module.js';
import { BenchMessagesController } from './bench-messages.controller.js';
import { BenchController } from './bench.controller.js';

/** Connections in the app's pool: one per load connection (or message in flight), as the demo configures it. */
export const POOL_SIZE = 20;

/** RabbitMQ deliveries a consumer holds unacked at once: one per connection of the pool. */
export const PREFETCH = POOL_SIZE;

/**
 * The bench app: the bench controllers (HTTP routes and RabbitMQ patterns) on the demo's credit
 * tables. The schema is created by the runner before any app starts (see `test/support/bench-database.ts`).
 * No purge timer: the app purges only when a case asks it to, never during another case's rounds.
 * `redisStore` is the lease store the `lease-redis` handlers use. The peer the bench compares with
 * is in every process too (`POST /peer/credits`), so each process is the same program whichever
 * route a case loads. With `encryption`, the module seals every recorded response (AES-256-GCM)
 * under a key drawn for the process. `consumers` replaces the RabbitMQ patterns with another
 * transport's handlers (a module of a JetStream controller, of SQS handlers), so that a consumer
 * process of that transport subscribes to nothing else.
 */
@Module({})
export class BenchAppModule {
  static register(databaseUrl: string, redisStore: LeaseStore, { encryption = false, consumers }: { encryption?: boolean; consumers?: DynamicModule } = {}): DynamicModule {
    return {
      module: BenchAppModule,
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl, entities: [LedgerEntry], extra: { max: POOL_SIZE } }),
        IdempotencyModule.forRoot({
          retention: '7d',
          purge: { interval: false },
          // Under valgrind (case 16) a pooled connection can take longer than the default 5 s to come.
          ...(process.env.BENCH_UNDER_TOOL === '1' ? { connectionTimeout: '10m' as const } : {}),
          stores: { redis: redisStore },
          ...(encryption ? { encryption: { keys: { bench: randomBytes(32) }, current: 'bench' } } : {}),
        }),
        PeerModule.register(),
        ...(consumers ? [consumers] : []),
      ],
      controllers: [BenchController, ...(consumers ? [] : [BenchMessagesController])],
    };
  }
}
