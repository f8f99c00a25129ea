import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { type DynamicModule, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateProcessedMessagesTable1764633600000, IdempotencyModule } from 'nestjs-idempotent-consumer';
import { addTransactionalDataSource } from 'typeorm-transactional';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { Account } from '../../../apps/demo-api/src/credits/account.entity.js';
import { LedgerEntry } from '../../../apps/demo-api/src/credits/ledger-entry.entity.js';
import { CreateCreditTables1764633600001 } from '../../../apps/demo-api/src/database/1764633600001-create-credit-tables.js';
import { StylesController, WRITERS } from './adoption-styles.js';

/** How the adopting service is set up. */
export interface AdoptionSettings {
  databaseUrl: string;
  poolSize: number;
  /** typeorm-transactional patches TypeORM for the whole process: only in a process of its own. */
  typeormTransactional: boolean;
}

/**
 * An existing service that adopts the module: its services write through injected repositories,
 * the data source, `@nestjs-cls/transactional` or `typeorm-transactional`, and it has a second
 * data source besides the one of the claims.
 */
@Module({})
export class AdoptionAppModule {
  static register(settings: AdoptionSettings): DynamicModule {
    const options: DataSourceOptions = {
      type: 'postgres',
      url: settings.databaseUrl,
      entities: [Account, LedgerEntry],
      migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateCreditTables1764633600001],
      migrationsRun: true,
      extra: { max: settings.poolSize },
    };
    return {
      module: AdoptionAppModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => options,
          dataSourceFactory: async (resolved) => {
            const dataSource = await new DataSource(resolved!).initialize();
            return settings.typeormTransactional ? addTransactionalDataSource(dataSource) : dataSource;
          },
        }),
        TypeOrmModule.forRoot({ name: 'audit', type: 'postgres', url: settings.databaseUrl, entities: [LedgerEntry], extra: { max: 2 } }),
        TypeOrmModule.forFeature([Account, LedgerEntry]),
        ClsModule.forRoot({
          global: true,
          middleware: { mount: true },
          plugins: [new ClsPluginTransactional({ adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) })],
        }),
        IdempotencyModule.forRoot({ purge: { interval: false } }),
      ],
      controllers: [StylesController],
      providers: Object.values(WRITERS),
    };
  }
}
