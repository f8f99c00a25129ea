import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import type { Kysely } from 'kysely';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/** The application's own pool, which the pool layers are built on. */
export const PG_POOL = Symbol('PG_POOL');
/** The Drizzle or Kysely instance on `PG_POOL`. */
export const DB = Symbol('DB');
/** The `LayerWriter` of the app's layer. */
export const WRITER = Symbol('WRITER');

/**
 * One data layer's way of writing a credit, as a service on that layer writes: through the
 * application's own instance, never through an object the module hands out. The table is
 * `layer_credits (account text NOT NULL, cents integer NOT NULL)`.
 */
export interface LayerWriter {
  /** Inserts one credit row; inside an idempotent handler the layer sends it in the claim's transaction. */
  credit(account: string, cents: number): Promise<void>;
  /** Inserts the same row in a transaction of the layer's own, as the service does without the module. */
  creditInTransaction(account: string, cents: number): Promise<void>;
}

const INSERT_SQL = 'INSERT INTO layer_credits (account, cents) VALUES ($1, $2)';

@Injectable()
export class PgWriter implements LayerWriter {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async credit(account: string, cents: number) {
    await this.pool.query(INSERT_SQL, [account, cents]);
  }

  async creditInTransaction(account: string, cents: number) {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(INSERT_SQL, [account, cents]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
}

const layerCredits = pgTable('layer_credits', { account: text('account').notNull(), cents: integer('cents').notNull() });

@Injectable()
export class DrizzleWriter implements LayerWriter {
  constructor(@Inject(DB) private readonly db: NodePgDatabase) {}

  async credit(account: string, cents: number) {
    await this.db.insert(layerCredits).values({ account, cents });
  }

  async creditInTransaction(account: string, cents: number) {
    await this.db.transaction(async (tx) => {
      await tx.insert(layerCredits).values({ account, cents });
    });
  }
}

interface KyselyTables {
  layer_credits: { account: string; cents: number };
}

@Injectable()
export class KyselyWriter implements LayerWriter {
  constructor(@Inject(DB) private readonly db: Kysely<KyselyTables>) {}

  async credit(account: string, cents: number) {
    await this.db.insertInto('layer_credits').values({ account, cents }).execute();
  }

  async creditInTransaction(account: string, cents: number) {
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('layer_credits').values({ account, cents }).execute();
    });
  }
}

@Injectable()
export class TypeOrmWriter implements LayerWriter {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async credit(account: string, cents: number) {
    await this.dataSource.query(INSERT_SQL, [account, cents]);
  }

  async creditInTransaction(account: string, cents: number) {
    await this.dataSource.transaction(async (manager) => {
      await manager.query(INSERT_SQL, [account, cents]);
    });
  }
}
