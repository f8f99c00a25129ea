import { Body, Controller, HttpCode, Module, Param, Post } from '@nestjs/common';
import { InjectDataSource, InjectRepository, TypeOrmModule } from '@nestjs/typeorm';
import { CreateProcessedMessagesTableMariaDb1796601600000, IdempotencyContext, IdempotencyModule, IdempotentHandler } from 'nestjs-idempotent-consumer';
import { randomUUID } from 'node:crypto';
import { Column, DataSource, Entity, PrimaryGeneratedColumn, type Repository } from 'typeorm';

@Entity('credits')
export class MariaDbCredit {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Column({ type: 'varchar', length: 64 })
  account!: string;

  @Column({ type: 'int' })
  cents!: number;
}

/** What a test asks of a credit written through TypeORM: where it waits, what it does inside, whether it fails. */
export interface TypeOrmCreditRequest {
  readonly cents: number;
  /** Rows of `gates` to lock, one after the other, before the credit is written. */
  readonly gates?: readonly string[];
  /** How long a statement of the handler waits for a row lock (MariaDB's default: 50 s). */
  readonly lockWaitSeconds?: number;
  /** A credit of 700 in `dataSource.transaction()` (a savepoint of the claim's), committed or rolled back by a throw. */
  readonly nested?: 'commit' | 'rollback';
  /** Two credits of 100 in two `dataSource.transaction()` calls at once. */
  readonly parallel?: boolean;
  /** A credit of 30 in `dataSource.transaction(isolation, ...)`. */
  readonly isolation?: 'READ COMMITTED' | 'SERIALIZABLE';
  /** A credit of 50 in a query runner's own transaction: connect, startTransaction, save, commitTransaction, release. */
  readonly queryRunner?: boolean;
  /** A credit of 5 through `IdempotencyContext.manager`. */
  readonly contextManager?: boolean;
  /** Throw after the writes. */
  readonly fail?: boolean;
}

/** Credits written through the app's TypeORM data source on MariaDB, which the claim's transaction joins. */
@Controller('credits')
export class MariaDbTypeOrmCreditsController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(MariaDbCredit) private readonly credits: Repository<MariaDbCredit>,
    private readonly idempotency: IdempotencyContext,
  ) {}

  @Post(':account')
  @HttpCode(201)
  @IdempotentHandler()
  async credit(@Param('account') account: string, @Body() body: TypeOrmCreditRequest) {
    await this.dataSource.query('SET SESSION innodb_lock_wait_timeout = ?', [body.lockWaitSeconds ?? 30]);
    for (const gate of body.gates ?? []) {
      await this.dataSource.query('SELECT name FROM gates WHERE name = ? FOR UPDATE', [gate]);
    }
    await this.credits.save(this.credits.create({ account, cents: body.cents }));
    if (body.nested) {
      const undone = new Error('the nested transaction rolls back');
      await this.dataSource
        .transaction(async (manager) => {
          await manager.save(MariaDbCredit, { account, cents: 700 });
          if (body.nested === 'rollback') throw undone;
        })
        .catch((error: unknown) => {
          if (error !== undone) throw error;
        });
    }
    if (body.parallel) {
      await Promise.all([1, 2].map(() => this.dataSource.transaction((manager) => manager.save(MariaDbCredit, { account, cents: 100 }))));
    }
    if (body.isolation) {
      await this.dataSource.transaction(body.isolation, (manager) => manager.save(MariaDbCredit, { account, cents: 30 }));
    }
    if (body.queryRunner) {
      const runner = this.dataSource.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await runner.manager.save(MariaDbCredit, { account, cents: 50 });
      await runner.commitTransaction();
      await runner.release();
    }
    if (body.contextManager) {
      await this.idempotency.manager.save(MariaDbCredit, { account, cents: 5 });
    }
    if (body.fail) {
      throw new Error('the handler fails after its writes');
    }
    return { account, cents: body.cents, note: 'é ✓', quote: randomUUID() };
  }

  /** In lease mode on the store: the credit commits on its own, the lease keeps its duplicates out. */
  @Post('leased/:account')
  @HttpCode(201)
  @IdempotentHandler({ mode: 'lease' })
  async leased(@Param('account') account: string, @Body() body: TypeOrmCreditRequest) {
    await this.credits.save(this.credits.create({ account, cents: body.cents }));
    return { account, cents: body.cents };
  }
}

/**
 * The app on a TypeORM data source of type `mariadb` at `url`, with the module's default data
 * layer (TypeORM); `migrationsRun`: the package's migration creates the store's table at start.
 */
export function mariaDbTypeOrmAppModule(url: string, options: { migrationsRun: boolean }) {
  @Module({
    imports: [
      TypeOrmModule.forRoot({
        type: 'mariadb',
        url,
        entities: [MariaDbCredit],
        migrations: [CreateProcessedMessagesTableMariaDb1796601600000],
        migrationsRun: options.migrationsRun,
        extra: { connectionLimit: 10 },
      }),
      TypeOrmModule.forFeature([MariaDbCredit]),
      IdempotencyModule.forRoot({ purge: { interval: false } }),
    ],
    controllers: [MariaDbTypeOrmCreditsController],
  })
  class MariaDbTypeOrmAppModule {}
  return MariaDbTypeOrmAppModule;
}
