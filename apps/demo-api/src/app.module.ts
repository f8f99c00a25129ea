import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateProcessedMessagesTable1764633600000, IdempotencyModule, type IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';
import { Account } from './credits/account.entity.js';
import { CreditsModule } from './credits/credits.module.js';
import { LedgerEntry } from './credits/ledger-entry.entity.js';
import { CreateCreditTables1764633600001 } from './database/1764633600001-create-credit-tables.js';
import { ObservabilityModule } from './observability/observability.module.js';

/** Settings the demo is started with. */
export interface DemoSettings {
  databaseUrl: string;
  /** Overrides of the demo's idempotency options (the tests tune the purge and the thresholds). */
  idempotency?: IdempotencyModuleOptions;
  /** Connections of the database pool. */
  poolSize?: number;
}

@Module({})
export class AppModule {
  static register(settings: DemoSettings): DynamicModule {
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: settings.databaseUrl,
          entities: [Account, LedgerEntry],
          migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateCreditTables1764633600001],
          migrationsRun: true,
          extra: { max: settings.poolSize ?? 20 },
        }),
        IdempotencyModule.forRoot({
          retention: '7d',
          // The provider retries for 3 days; a queue message is redelivered until it is acked or
          // dead-lettered, within minutes of its first delivery here (maxAttempts, retryDelay).
          senders: { payments: { redeliveryHorizon: '3d' }, 'credits-queue': { redeliveryHorizon: '1d' } },
          ...settings.idempotency,
        }),
        CreditsModule,
        ObservabilityModule,
      ],
    };
  }
}
