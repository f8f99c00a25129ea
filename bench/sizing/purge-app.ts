import { type DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyMetricsService, IdempotencyModule, IdempotencyPurgeService, type PurgeFigures, type PurgeRun } from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';

/** The module with its default purge (batch size, and interval unless the timer is off), on one data source. */
@Module({})
class SizingPurgeModule {
  static register(url: string, poolSize: number, timer: boolean): DynamicModule {
    return {
      module: SizingPurgeModule,
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: poolSize } }),
        IdempotencyModule.forRoot({ metrics: { registry: false }, ...(timer ? {} : { purge: { interval: false } }) }),
      ],
    };
  }
}

/** A Nest application context holding the idempotency module, as a service's. */
export interface PurgeApp {
  /** The application's data source, whose pool the purge shares. */
  readonly dataSource: DataSource;
  /** `IdempotencyPurgeService.purgeNow()`. */
  purgeNow(): Promise<PurgeRun>;
  /** The purge's counters since the start. */
  figures(): PurgeFigures;
  close(): Promise<void>;
}

/**
 * Starts the module on the database at `url`. With `timer`, its own purge timer runs at the
 * default interval; without, the purge runs only when asked.
 */
export async function startPurgeApp(url: string, { poolSize, timer }: { poolSize: number; timer: boolean }): Promise<PurgeApp> {
  const app = await NestFactory.createApplicationContext(SizingPurgeModule.register(url, poolSize, timer), { logger: false });
  const purge = app.get(IdempotencyPurgeService);
  const metrics = app.get(IdempotencyMetricsService);
  return {
    dataSource: app.get<DataSource>(getDataSourceToken()),
    purgeNow: () => purge.purgeNow(),
    figures: () => metrics.purge(),
    close: () => app.close(),
  };
}
