import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterDrizzleOrm } from '@nestjs-cls/transactional-adapter-drizzle-orm';
import type { TransactionalAdapterPrisma } from '@nestjs-cls/transactional-adapter-prisma';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { EntitySchema, type MikroORM } from '@mikro-orm/core';
import type { PrismaClient } from '@prisma/client';
import { sql as drizzleSql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import { type Kysely, sql as kyselySql } from 'kysely';
import type { Pool } from 'pg';
import type { TransactionStatements } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter, NestedEnding } from 'nestjs-idempotent-consumer/testing';
import type { DataSource } from 'typeorm';

/** The application's own pool, which the pool layers are built on. */
export const PG_POOL = Symbol('PG_POOL');
/** The Drizzle or Kysely instance on `PG_POOL`. */
export const DB = Symbol('DB');

const GATE_SQL = 'SELECT name FROM gates WHERE name = $1 FOR UPDATE';
const INSERT_RETURNING_ID = 'INSERT INTO layer_credits (account, cents) VALUES ($1, $2) RETURNING id::text AS id';
const FIND_CREDIT = 'SELECT id FROM layer_credits WHERE id = $1';

/** A rollback the writer asks for, thrown out of the layer's transaction callback and caught after it. */
class NestedRollback extends Error {}

@Injectable()
export class PgWriter implements DataLayerWriter {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async credit(account: string, cents: number) {
    await this.pool.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, cents]);
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, cents]);
      await client.query(ending === 'commit' ? 'COMMIT' : 'ROLLBACK');
    } finally {
      client.release();
    }
  }

  async commitItself() {
    await this.pool.query('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    return (await this.pool.query<{ id: string }>(INSERT_RETURNING_ID, [account, cents])).rows[0].id;
  }

  async findCredit(id: string) {
    return (await this.pool.query(FIND_CREDIT, [id])).rows.length === 1;
  }

  async waitAtGate(gate: string) {
    await this.pool.query(GATE_SQL, [gate]);
  }

  async inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(
        (sql) => client.query(sql),
        async (account, cents) => void (await client.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, cents])),
      );
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
}

export const layerCredits = pgTable('layer_credits', { account: text('account').notNull(), cents: integer('cents').notNull() });

@Injectable()
export class DrizzleWriter implements DataLayerWriter {
  constructor(@Inject(DB) private readonly db: NodePgDatabase) {}

  async credit(account: string, cents: number) {
    await this.db.insert(layerCredits).values({ account, cents });
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.db
      .transaction(async (tx) => {
        await tx.insert(layerCredits).values({ account, cents });
        if (ending === 'rollback') throw new NestedRollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof NestedRollback)) throw error;
      });
  }

  async commitItself() {
    await this.db.execute(drizzleSql`COMMIT`);
  }

  async creditReturningId(account: string, cents: number) {
    const { rows } = await this.db.execute<{ id: string }>(drizzleSql`INSERT INTO layer_credits (account, cents) VALUES (${account}, ${cents}) RETURNING id::text AS id`);
    return rows[0].id;
  }

  async findCredit(id: string) {
    return (await this.db.execute(drizzleSql`SELECT id FROM layer_credits WHERE id = ${id}`)).rows.length === 1;
  }

  async waitAtGate(gate: string) {
    await this.db.execute(drizzleSql`SELECT name FROM gates WHERE name = ${gate} FOR UPDATE`);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.db.transaction((tx) =>
      work(
        (sql) => tx.execute(drizzleSql.raw(sql)),
        async (account, cents) => void (await tx.insert(layerCredits).values({ account, cents })),
      ),
    );
  }
}

interface KyselyTables {
  layer_credits: { account: string; cents: number };
}

@Injectable()
export class KyselyWriter implements DataLayerWriter {
  constructor(@Inject(DB) private readonly db: Kysely<KyselyTables>) {}

  async credit(account: string, cents: number) {
    await this.db.insertInto('layer_credits').values({ account, cents }).execute();
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('layer_credits').values({ account, cents }).execute();
        if (ending === 'rollback') throw new NestedRollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof NestedRollback)) throw error;
      });
  }

  async commitItself() {
    await kyselySql`COMMIT`.execute(this.db);
  }

  async creditReturningId(account: string, cents: number) {
    return (await kyselySql<{ id: string }>`INSERT INTO layer_credits (account, cents) VALUES (${account}, ${cents}) RETURNING id::text AS id`.execute(this.db)).rows[0].id;
  }

  async findCredit(id: string) {
    return (await kyselySql`SELECT id FROM layer_credits WHERE id = ${id}`.execute(this.db)).rows.length === 1;
  }

  async waitAtGate(gate: string) {
    await kyselySql`SELECT name FROM gates WHERE name = ${gate} FOR UPDATE`.execute(this.db);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.db.transaction().execute((trx) =>
      work(
        (sql) => kyselySql.raw(sql).execute(trx),
        async (account, cents) => void (await trx.insertInto('layer_credits').values({ account, cents }).execute()),
      ),
    );
  }
}

/**
 * What `PrismaWriter` uses of a Prisma client, or of its transaction, whichever database its
 * schema is generated for (one signature a method: against overloads, TypeScript would not infer
 * the generated methods' type arguments).
 */
export interface PrismaCredits {
  readonly layerCredit: {
    create(args: { data: { account: string; cents: number }; select?: { id: true } }): Promise<{ id: bigint }>;
    findUnique(args: { where: { id: bigint } }): Promise<unknown>;
  };
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
  $queryRawUnsafe(query: string, ...values: unknown[]): Promise<unknown>;
}

/** A Prisma client as `PrismaWriter` uses it: `PrismaCredits`, and interactive transactions. */
export interface PrismaCreditsClient extends PrismaCredits {
  $transaction<R>(fn: (tx: PrismaCredits) => Promise<R>): Promise<R>;
}

@Injectable()
export class PrismaWriter implements DataLayerWriter {
  /** The gate's `SELECT ... FOR UPDATE`, in the placeholders of the client's database. */
  protected readonly gateSql: string = GATE_SQL;

  constructor(@Inject(DB) private readonly prisma: PrismaCreditsClient) {}

  async credit(account: string, cents: number) {
    await this.prisma.layerCredit.create({ data: { account, cents } });
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.prisma
      .$transaction(async (tx) => {
        await tx.layerCredit.create({ data: { account, cents } });
        if (ending === 'rollback') throw new NestedRollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof NestedRollback)) throw error;
      });
  }

  async commitItself() {
    await this.prisma.$executeRawUnsafe('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    return String((await this.prisma.layerCredit.create({ data: { account, cents }, select: { id: true } })).id);
  }

  async findCredit(id: string) {
    return (await this.prisma.layerCredit.findUnique({ where: { id: BigInt(id) } })) !== null;
  }

  async waitAtGate(gate: string) {
    await this.prisma.$queryRawUnsafe(this.gateSql, gate);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.prisma.$transaction((tx) =>
      work(
        (sql) => tx.$queryRawUnsafe(sql),
        async (account, cents) => void (await tx.layerCredit.create({ data: { account, cents } })),
      ),
    );
  }
}

/** `@nestjs-cls/transactional` with its Drizzle adapter: `TransactionHost.tx`, and a `@Transactional()` method for the nested write. */
@Injectable()
export class DrizzleClsWriter implements DataLayerWriter {
  constructor(private readonly host: TransactionHost<TransactionalAdapterDrizzleOrm<NodePgDatabase>>) {}

  async credit(account: string, cents: number) {
    await this.host.tx.insert(layerCredits).values({ account, cents });
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.writeInTransaction(account, cents, ending).catch((error: unknown) => {
      if (!(error instanceof NestedRollback)) throw error;
    });
  }

  @Transactional()
  private async writeInTransaction(account: string, cents: number, ending: NestedEnding) {
    await this.host.tx.insert(layerCredits).values({ account, cents });
    if (ending === 'rollback') throw new NestedRollback();
  }

  async commitItself() {
    await this.host.tx.execute(drizzleSql`COMMIT`);
  }

  async creditReturningId(account: string, cents: number) {
    const { rows } = await this.host.tx.execute<{ id: string }>(drizzleSql`INSERT INTO layer_credits (account, cents) VALUES (${account}, ${cents}) RETURNING id::text AS id`);
    return rows[0].id;
  }

  async findCredit(id: string) {
    return (await this.host.tx.execute(drizzleSql`SELECT id FROM layer_credits WHERE id = ${id}`)).rows.length === 1;
  }

  async waitAtGate(gate: string) {
    await this.host.tx.execute(drizzleSql`SELECT name FROM gates WHERE name = ${gate} FOR UPDATE`);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.host.withTransaction(() =>
      work(
        (sql) => this.host.tx.execute(drizzleSql.raw(sql)),
        async (account, cents) => void (await this.host.tx.insert(layerCredits).values({ account, cents })),
      ),
    );
  }
}

/** `@nestjs-cls/transactional` with its Prisma adapter: `TransactionHost.tx`, and a `@Transactional()` method for the nested write. */
@Injectable()
export class PrismaClsWriter implements DataLayerWriter {
  constructor(private readonly host: TransactionHost<TransactionalAdapterPrisma<PrismaClient>>) {}

  async credit(account: string, cents: number) {
    await this.host.tx.layerCredit.create({ data: { account, cents } });
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.writeInTransaction(account, cents, ending).catch((error: unknown) => {
      if (!(error instanceof NestedRollback)) throw error;
    });
  }

  @Transactional()
  private async writeInTransaction(account: string, cents: number, ending: NestedEnding) {
    await this.host.tx.layerCredit.create({ data: { account, cents } });
    if (ending === 'rollback') throw new NestedRollback();
  }

  async commitItself() {
    await this.host.tx.$executeRawUnsafe('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    return String((await this.host.tx.layerCredit.create({ data: { account, cents }, select: { id: true } })).id);
  }

  async findCredit(id: string) {
    return (await this.host.tx.layerCredit.findUnique({ where: { id: BigInt(id) } })) !== null;
  }

  async waitAtGate(gate: string) {
    await this.host.tx.$queryRawUnsafe(GATE_SQL, gate);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.host.withTransaction(() =>
      work(
        (sql) => this.host.tx.$queryRawUnsafe(sql),
        async (account, cents) => void (await this.host.tx.layerCredit.create({ data: { account, cents } })),
      ),
    );
  }
}

/** The credits as a MikroORM entity, declared without decorators. */
export class LayerCredit {
  id?: string;
  account!: string;
  cents!: number;
}

export const LayerCreditSchema = new EntitySchema<LayerCredit>({
  class: LayerCredit,
  tableName: 'layer_credits',
  properties: { id: { type: 'bigint', primary: true, autoincrement: true }, account: { type: 'string' }, cents: { type: 'integer' } },
});

/** MikroORM as a service uses it: a fork of the entity manager per unit of work, flushed. */
@Injectable()
export class MikroOrmWriter implements DataLayerWriter {
  /** The INSERT answering the new row's id as text, in the SQL of the ORM's database. */
  protected readonly insertReturningId: string = 'INSERT INTO layer_credits (account, cents) VALUES (?, ?) RETURNING id::text AS id';

  constructor(@Inject(DB) private readonly orm: MikroORM) {}

  async credit(account: string, cents: number) {
    const em = this.orm.em.fork();
    em.create(LayerCredit, { account, cents });
    await em.flush();
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.orm.em
      .fork()
      .transactional(async (em) => {
        em.create(LayerCredit, { account, cents });
        await em.flush();
        if (ending === 'rollback') throw new NestedRollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof NestedRollback)) throw error;
      });
  }

  async commitItself() {
    await this.orm.em.getConnection().execute('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    const [{ id }] = await this.orm.em.getConnection().execute<{ id: string }[]>(this.insertReturningId, [account, cents]);
    return id;
  }

  async findCredit(id: string) {
    return (await this.orm.em.fork().findOne(LayerCredit, { id })) !== null;
  }

  async waitAtGate(gate: string) {
    await this.orm.em.getConnection().execute('SELECT name FROM gates WHERE name = ? FOR UPDATE', [gate]);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.orm.em.fork().transactional((em) =>
      work(
        (sql) => em.getConnection().execute(sql, [], 'all', em.getTransactionContext()),
        async (account, cents) => {
          em.create(LayerCredit, { account, cents });
          await em.flush();
        },
      ),
    );
  }
}

@Injectable()
export class TypeOrmWriter implements DataLayerWriter {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async credit(account: string, cents: number) {
    await this.dataSource.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, cents]);
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.dataSource
      .transaction(async (manager) => {
        await manager.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, cents]);
        if (ending === 'rollback') throw new NestedRollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof NestedRollback)) throw error;
      });
  }

  async commitItself() {
    await this.dataSource.query('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    return ((await this.dataSource.query(INSERT_RETURNING_ID, [account, cents])) as { id: string }[])[0].id;
  }

  async findCredit(id: string) {
    return ((await this.dataSource.query(FIND_CREDIT, [id])) as unknown[]).length === 1;
  }

  async waitAtGate(gate: string) {
    await this.dataSource.query(GATE_SQL, [gate]);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.dataSource.transaction((manager) =>
      work(
        (sql) => manager.query(sql),
        async (account, cents) => void (await manager.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, cents])),
      ),
    );
  }
}
