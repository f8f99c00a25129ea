import { TransactionHost, Transactional as ClsTransactional } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Body, Controller, Get, Injectable, NotFoundException, Param, Post } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import { Transactional as TypeOrmTransactional } from 'typeorm-transactional';
import type { DataSource, EntityManager, Repository } from 'typeorm';
import { LedgerEntry } from '../../../apps/demo-api/src/credits/ledger-entry.entity.js';
import { roundTrips } from './round-trips.js';

/** One way a service writes: a ledger entry for the credit, then (for the crash tests) a wait at a gate the test holds. */
export interface CreditWriter {
  credit(account: string, cents: number, gate: string | undefined): Promise<void>;
}

const GATE_SQL = 'SELECT name FROM gates WHERE name = $1 FOR UPDATE';

/** An injected repository, as most services write. */
@Injectable()
export class RepositoryWriter implements CreditWriter {
  constructor(@InjectRepository(LedgerEntry) private readonly ledger: Repository<LedgerEntry>) {}

  async credit(account: string, cents: number, gate: string | undefined) {
    await this.ledger.insert({ account, cents });
    if (gate) await this.ledger.query(GATE_SQL, [gate]);
  }
}

/** `dataSource.manager`. */
@Injectable()
export class DataSourceManagerWriter implements CreditWriter {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async credit(account: string, cents: number, gate: string | undefined) {
    await this.dataSource.manager.insert(LedgerEntry, { account, cents });
    if (gate) await this.dataSource.manager.query(GATE_SQL, [gate]);
  }
}

/** A transaction of the service's own, `dataSource.transaction()`. */
@Injectable()
export class DataSourceTransactionWriter implements CreditWriter {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async credit(account: string, cents: number, gate: string | undefined) {
    await this.dataSource.transaction((manager: EntityManager) => manager.insert(LedgerEntry, { account, cents }));
    if (gate) await this.dataSource.query(GATE_SQL, [gate]);
  }
}

/** `@nestjs-cls/transactional` with its TypeORM adapter: a `@Transactional()` method writing through `TransactionHost.tx`. */
@Injectable()
export class ClsTransactionalWriter implements CreditWriter {
  constructor(private readonly host: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async credit(account: string, cents: number, gate: string | undefined) {
    await this.write(account, cents);
    if (gate) await this.host.tx.query(GATE_SQL, [gate]);
  }

  @ClsTransactional()
  private async write(account: string, cents: number) {
    await this.host.tx.insert(LedgerEntry, { account, cents });
  }
}

/** `TransactionHost.tx` of `@nestjs-cls/transactional`, outside any `@Transactional()`. */
@Injectable()
export class ClsHostWriter implements CreditWriter {
  constructor(private readonly host: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async credit(account: string, cents: number, gate: string | undefined) {
    await this.host.tx.insert(LedgerEntry, { account, cents });
    if (gate) await this.host.tx.query(GATE_SQL, [gate]);
  }
}

/** `typeorm-transactional`: its `@Transactional()` and the repositories it patches. */
@Injectable()
export class TypeOrmTransactionalWriter implements CreditWriter {
  constructor(@InjectRepository(LedgerEntry) private readonly ledger: Repository<LedgerEntry>) {}

  async credit(account: string, cents: number, gate: string | undefined) {
    await this.write(account, cents);
    if (gate) await this.ledger.query(GATE_SQL, [gate]);
  }

  @TypeOrmTransactional()
  private async write(account: string, cents: number) {
    await this.ledger.insert({ account, cents });
  }
}

/** A second data source (an audit database, say): it cannot commit with the claim. */
@Injectable()
export class SecondDataSourceWriter implements CreditWriter {
  constructor(@InjectDataSource('audit') private readonly audit: DataSource) {}

  async credit(account: string, cents: number) {
    await this.audit.manager.insert(LedgerEntry, { account, cents });
  }
}

export const WRITERS = {
  repository: RepositoryWriter,
  'data-source-manager': DataSourceManagerWriter,
  'data-source-transaction': DataSourceTransactionWriter,
  'cls-transactional': ClsTransactionalWriter,
  'cls-host': ClsHostWriter,
  'typeorm-transactional': TypeOrmTransactionalWriter,
  'second-data-source': SecondDataSourceWriter,
} as const;

export type WritingStyle = keyof typeof WRITERS;

/** `POST /styles/:style/:account`: an idempotent credit written in one style; `fail` throws after the write. */
@Controller('styles')
export class StylesController {
  constructor(
    private readonly moduleRef: ModuleRef,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The same write in a plain TypeORM transaction, without the module: the round trips to compare with
   * (declared before `:style/:account`, which would take its path). */
  @Post('plain/:account')
  async plain(@Param('account') account: string, @Body() body: { cents: number }) {
    await this.dataSource.transaction((manager) => manager.insert(LedgerEntry, { account, cents: body.cents }));
    return { account, cents: body.cents };
  }

  @Post(':style/:account')
  @IdempotentHandler()
  async credit(@Param('style') style: string, @Param('account') account: string, @Body() body: { cents: number; gate?: string; fail?: boolean }) {
    if (!(style in WRITERS)) {
      throw new NotFoundException(`no writing style '${style}'`);
    }
    await this.moduleRef.get<CreditWriter>(WRITERS[style as WritingStyle]).credit(account, body.cents, body.gate);
    if (body.fail) {
      throw new Error('the handler fails after its write');
    }
    return { style, account, cents: body.cents };
  }

  /** Round trips sent to PostgreSQL by this process so far. */
  @Get('round-trips')
  roundTrips() {
    return { roundTrips: roundTrips() };
  }
}
