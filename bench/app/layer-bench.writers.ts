import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { EntitySchema, type MikroORM } from '@mikro-orm/core';
import type { PrismaClient } from '@prisma/client';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import type { Kysely } from 'kysely';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/** The application's own pool, which the pool layers are built on. */
export const PG_POOL = Symbol('PG_POOL');
/** The Drizzle, Kysely or Prisma instance on `PG_POOL`, or the `MikroORM` instance. */
export const DB = Symbol('DB');
/** The `LayerWriter` of the app's layer. */
export const WRITER = Symbol('WRITER');

/**
 * One data layer's way of writing a credit, as a service on that layer writes: through the
 * application's own instance, never through an object the module hands out. The table is
 * `layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)`: the
 * ORMs' models need the key, the other layers leave it to its default.
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

/**
 * Prisma 7 on the pool (`@prisma/adapter-pg`), its client generated from the contract suite's
 * schema (`test/apps/data-layers/prisma/schema.prisma`: `LayerCredit` on `layer_credits`).
 */
@Injectable()
export class PrismaWriter implements LayerWriter {
  constructor(@Inject(DB) private readonly prisma: PrismaClient) {}

  async credit(account: string, cents: number) {
    await this.prisma.layerCredit.create({ data: { account, cents } });
  }

  async creditInTransaction(account: string, cents: number) {
    await this.prisma.$transaction(async (tx) => {
      await tx.layerCredit.create({ data: { account, cents } });
    });
  }
}

/** The credits as a MikroORM entity, declared without decorators, as the contract suite declares them. */
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

/** MikroORM as a service uses it: a fork of the entity manager per unit of work, the entity created and flushed. */
@Injectable()
export class MikroOrmWriter implements LayerWriter {
  constructor(@Inject(DB) private readonly orm: MikroORM) {}

  async credit(account: string, cents: number) {
    const em = this.orm.em.fork();
    em.create(LayerCredit, { account, cents });
    await em.flush();
  }

  async creditInTransaction(account: string, cents: number) {
    await this.orm.em.fork().transactional(async (em) => {
      em.create(LayerCredit, { account, cents });
      await em.flush();
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
