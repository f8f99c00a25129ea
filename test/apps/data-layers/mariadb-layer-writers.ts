import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { MikroORM } from '@mikro-orm/core';
import { sql as drizzleSql } from 'drizzle-orm';
import type { MySql2Database } from 'drizzle-orm/mysql2';
import { int, mysqlTable, varchar } from 'drizzle-orm/mysql-core';
import { type Kysely, sql as kyselySql } from 'kysely';
import type { Pool as MariaDbPool } from 'mariadb';
import type { Pool } from 'mysql2/promise';
import type { TransactionStatements } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter, NestedEnding } from 'nestjs-idempotent-consumer/testing';
import type { DataSource } from 'typeorm';
import { MikroOrmWriter, PrismaWriter } from './layer-writers.js';
import type { PrismaClient } from './prisma-mariadb/generated/client.js';

/** The application's own mysql2 pool (`mysql2/promise`), which `Mysql2PoolDataLayer` joins. */
export const MYSQL2_POOL = Symbol('MYSQL2_POOL');
/** The application's own pool of the mariadb connector (`mariadb`'s promise API), which `MariaDbPoolDataLayer` joins. */
export const MARIADB_POOL = Symbol('MARIADB_POOL');
/** The layer's instance: Drizzle or Kysely on `MYSQL2_POOL`, Prisma on `MARIADB_POOL`, or MikroORM on a pool of its own. */
export const MARIADB_DB = Symbol('MARIADB_DB');

const INSERT = 'INSERT INTO layer_credits (account, cents) VALUES (?, ?)';
const INSERT_RETURNING_ID = 'INSERT INTO layer_credits (account, cents) VALUES (?, ?) RETURNING id';
const FIND_CREDIT = 'SELECT id FROM layer_credits WHERE id = ?';
const GATE_SQL = 'SELECT name FROM gates WHERE name = ? FOR UPDATE';

/** A rollback the writer asks for, thrown out of the layer's transaction callback and caught after it. */
class NestedRollback extends Error {}

/** A connection of a pool on MariaDB, as both drivers' promise APIs answer it. */
interface PoolConnection {
  query(sql: string, values?: unknown[]): Promise<unknown>;
  beginTransaction(): Promise<unknown>;
  commit(): Promise<unknown>;
  rollback(): Promise<unknown>;
  release(): unknown;
}

/**
 * Credits through a pool on MariaDB (mysql2/promise's, or the mariadb connector's): the pool, and a
 * connection of it in a transaction of its own. `rowsOf` reads a query's rows from what the driver answers.
 */
abstract class PoolWriter implements DataLayerWriter {
  protected constructor(
    private readonly pool: { query(sql: string, values?: unknown[]): Promise<unknown>; getConnection(): Promise<PoolConnection> },
    private readonly rowsOf: (answer: unknown) => unknown[],
  ) {}

  async credit(account: string, cents: number) {
    await this.pool.query(INSERT, [account, cents]);
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    const connection = await this.pool.getConnection();
    try {
      await connection.beginTransaction();
      await connection.query(INSERT, [account, cents]);
      await (ending === 'commit' ? connection.commit() : connection.rollback());
    } finally {
      await connection.release();
    }
  }

  async commitItself() {
    await this.pool.query('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    // A BIGINT: a number from mysql2, a BigInt from the mariadb connector.
    const [{ id }] = this.rowsOf(await this.pool.query(INSERT_RETURNING_ID, [account, cents])) as { id: bigint | number }[];
    return String(id);
  }

  async findCredit(id: string) {
    return this.rowsOf(await this.pool.query(FIND_CREDIT, [id])).length === 1;
  }

  async waitAtGate(gate: string) {
    await this.pool.query(GATE_SQL, [gate]);
  }

  async inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    const connection = await this.pool.getConnection();
    try {
      await connection.beginTransaction();
      const result = await work(
        async (sql) => this.rowsOf(await connection.query(sql)),
        async (account, cents) => void (await connection.query(INSERT, [account, cents])),
      );
      await connection.commit();
      return result;
    } catch (error) {
      await connection.rollback();
      throw error;
    } finally {
      await connection.release();
    }
  }
}

/** Credits through a mysql2 pool on MariaDB (`mysql2/promise`: a query answers `[rows, fields]`). */
@Injectable()
export class Mysql2Writer extends PoolWriter {
  constructor(@Inject(MYSQL2_POOL) pool: Pool) {
    super(pool, (answer) => (answer as [unknown[]])[0]);
  }
}

/** Credits through a pool of the mariadb connector (a query answers its rows). */
@Injectable()
export class MariaDbWriter extends PoolWriter {
  constructor(@Inject(MARIADB_POOL) pool: MariaDbPool) {
    super(pool, (answer) => answer as unknown[]);
  }
}

/** `PrismaWriter` on Prisma's mariadb adapter (on `MARIADB_POOL`): the gate in MariaDB's placeholders. */
@Injectable()
export class PrismaMariaDbWriter extends PrismaWriter {
  protected override readonly gateSql = GATE_SQL;

  constructor(@Inject(MARIADB_DB) prisma: PrismaClient) {
    super(prisma);
  }
}

/** `MikroOrmWriter` on MikroORM's `MariaDbDriver`: the id as text in MariaDB's SQL. */
@Injectable()
export class MikroOrmMariaDbWriter extends MikroOrmWriter {
  protected override readonly insertReturningId = 'INSERT INTO layer_credits (account, cents) VALUES (?, ?) RETURNING CAST(id AS CHAR) AS id';

  constructor(@Inject(MARIADB_DB) orm: MikroORM) {
    super(orm);
  }
}

/** Credits through TypeORM's `mariadb` data source: its queries, and its transactions. */
@Injectable()
export class TypeOrmMariaDbWriter implements DataLayerWriter {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async credit(account: string, cents: number) {
    await this.dataSource.query(INSERT, [account, cents]);
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.dataSource
      .transaction(async (manager) => {
        await manager.query(INSERT, [account, cents]);
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
    return String(((await this.dataSource.query(INSERT_RETURNING_ID, [account, cents])) as { id: number }[])[0].id);
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
        async (account, cents) => void (await manager.query(INSERT, [account, cents])),
      ),
    );
  }
}

const layerCredits = mysqlTable('layer_credits', { account: varchar('account', { length: 255 }).notNull(), cents: int('cents').notNull() });

/** Rows of a Drizzle `execute()` on mysql2: `[rows, fields]`. */
const drizzleRows = (result: unknown) => (result as [unknown[]])[0];

/** Credits through Drizzle on the mysql2 pool (`drizzle-orm/mysql2`). */
@Injectable()
export class DrizzleMySqlWriter implements DataLayerWriter {
  constructor(@Inject(MARIADB_DB) private readonly db: MySql2Database) {}

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
    const rows = drizzleRows(await this.db.execute(drizzleSql`INSERT INTO layer_credits (account, cents) VALUES (${account}, ${cents}) RETURNING id`)) as { id: number }[];
    return String(rows[0].id);
  }

  async findCredit(id: string) {
    return drizzleRows(await this.db.execute(drizzleSql`SELECT id FROM layer_credits WHERE id = ${id}`)).length === 1;
  }

  async waitAtGate(gate: string) {
    await this.db.execute(drizzleSql`SELECT name FROM gates WHERE name = ${gate} FOR UPDATE`);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.db.transaction((tx) =>
      work(
        async (sql) => drizzleRows(await tx.execute(drizzleSql.raw(sql))),
        async (account, cents) => void (await tx.insert(layerCredits).values({ account, cents })),
      ),
    );
  }
}

interface KyselyTables {
  layer_credits: { account: string; cents: number };
}

/** Credits through Kysely's `MysqlDialect` on the mysql2 pool. */
@Injectable()
export class KyselyMySqlWriter implements DataLayerWriter {
  constructor(@Inject(MARIADB_DB) private readonly db: Kysely<KyselyTables>) {}

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
    return String((await kyselySql<{ id: number }>`INSERT INTO layer_credits (account, cents) VALUES (${account}, ${cents}) RETURNING id`.execute(this.db)).rows[0].id);
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
        async (sql) => (await kyselySql.raw(sql).execute(trx)).rows,
        async (account, cents) => void (await trx.insertInto('layer_credits').values({ account, cents }).execute()),
      ),
    );
  }
}
