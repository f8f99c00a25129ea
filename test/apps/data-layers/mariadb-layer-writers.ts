import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool } from 'mysql2/promise';
import type { TransactionStatements } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter, NestedEnding } from 'nestjs-idempotent-consumer/testing';
import type { DataSource } from 'typeorm';

/** The application's own mysql2 pool (`mysql2/promise`), which `Mysql2PoolDataLayer` joins. */
export const MYSQL2_POOL = Symbol('MYSQL2_POOL');

const INSERT = 'INSERT INTO layer_credits (account, cents) VALUES (?, ?)';
const INSERT_RETURNING_ID = 'INSERT INTO layer_credits (account, cents) VALUES (?, ?) RETURNING id';
const FIND_CREDIT = 'SELECT id FROM layer_credits WHERE id = ?';
const GATE_SQL = 'SELECT name FROM gates WHERE name = ? FOR UPDATE';

/** A rollback the writer asks for, thrown out of the layer's transaction callback and caught after it. */
class NestedRollback extends Error {}

/** Credits through a mysql2 pool on MariaDB: the pool, and a connection of it in a transaction of its own. */
@Injectable()
export class Mysql2Writer implements DataLayerWriter {
  constructor(@Inject(MYSQL2_POOL) private readonly pool: Pool) {}

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
      connection.release();
    }
  }

  async commitItself() {
    await this.pool.query('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    const [rows] = await this.pool.query(INSERT_RETURNING_ID, [account, cents]);
    return String((rows as { id: number }[])[0].id);
  }

  async findCredit(id: string) {
    const [rows] = await this.pool.query(FIND_CREDIT, [id]);
    return (rows as unknown[]).length === 1;
  }

  async waitAtGate(gate: string) {
    await this.pool.query(GATE_SQL, [gate]);
  }

  async inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    const connection = await this.pool.getConnection();
    try {
      await connection.beginTransaction();
      const result = await work(
        async (sql) => (await connection.query(sql))[0],
        async (account, cents) => void (await connection.query(INSERT, [account, cents])),
      );
      await connection.commit();
      return result;
    } catch (error) {
      await connection.rollback();
      throw error;
    } finally {
      connection.release();
    }
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
