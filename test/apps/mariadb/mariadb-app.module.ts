import { Body, Controller, HttpCode, Inject, Module, Param, Post } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { IdempotencyModule, IdempotentHandler, Mysql2PoolDataLayer } from 'nestjs-idempotent-consumer';
import { drizzle, type MySql2Database } from 'drizzle-orm/mysql2';
import { Kysely, MysqlDialect, sql } from 'kysely';
import type { Pool } from 'mysql2/promise';
import { randomUUID } from 'node:crypto';

/** The provider of the app's mysql2 pool. */
export const POOL = 'MARIADB_POOL';

/** What a test asks of a credit: where it waits, whether it fails, what it does inside. */
interface CreditRequest {
  readonly cents: number;
  /** Rows of `gates` to lock, one after the other, before the credit is written. */
  readonly gates?: readonly string[];
  /** A transaction of the handler's own (a savepoint of the claim's), committed or rolled back. */
  readonly nested?: 'commit' | 'rollback';
  /** Throw after the write. */
  readonly fail?: boolean;
  /** Catch an error of the gates and write the credit anyway. */
  readonly swallow?: boolean;
  /** Write the credit as a prepared statement (`execute()`). */
  readonly prepared?: boolean;
  /** Write the credit through Drizzle or Kysely on the pool, in a transaction of theirs committed or rolled back (a savepoint of the claim's). */
  readonly layer?: { readonly name: 'drizzle' | 'kysely'; readonly ending: 'commit' | 'rollback' };
  /** Send a bare COMMIT after the write. */
  readonly commitItself?: boolean;
  /** How long a statement of the handler waits for a row lock (MariaDB's default: 50 s). */
  readonly lockWaitSeconds?: number;
}

/** Credits written through the app's own mysql2 pool, which the claim's transaction joins. */
@Controller('credits')
export class MariaDbCreditsController {
  private readonly drizzle: MySql2Database;
  private readonly kysely: Kysely<unknown>;

  constructor(@Inject(POOL) private readonly pool: Pool) {
    this.drizzle = drizzle({ client: pool });
    this.kysely = new Kysely({ dialect: new MysqlDialect({ pool: pool.pool }) });
  }

  @Post(':account')
  @HttpCode(201)
  @IdempotentHandler()
  async credit(@Param('account') account: string, @Body() body: CreditRequest) {
    await this.pool.query('SET SESSION innodb_lock_wait_timeout = ?', [body.lockWaitSeconds ?? 30]);
    try {
      for (const gate of body.gates ?? []) {
        await this.pool.query('SELECT name FROM gates WHERE name = ? FOR UPDATE', [gate]);
      }
    } catch (error) {
      if (!body.swallow) throw error;
    }
    await (body.prepared ? this.pool.execute('INSERT INTO credits (account, cents) VALUES (?, ?)', [account, body.cents]) : this.pool.query('INSERT INTO credits (account, cents) VALUES (?, ?)', [account, body.cents]));
    if (body.layer) {
      await this.inLayerTransaction(body.layer.name, body.layer.ending, account);
    }
    if (body.commitItself) {
      await this.pool.query('COMMIT');
    }
    if (body.nested) {
      const connection = await this.pool.getConnection();
      await connection.beginTransaction();
      await connection.query('INSERT INTO credits (account, cents) VALUES (?, ?)', [account, 700]);
      await (body.nested === 'commit' ? connection.commit() : connection.rollback());
      connection.release();
    }
    if (body.fail) {
      throw new Error('the handler fails after its write');
    }
    return { account, cents: body.cents, note: 'é ✓', quote: randomUUID() };
  }

  /** In lease mode on the store: the credit commits on its own, the lease keeps its duplicates out. */
  @Post('leased/:account')
  @HttpCode(201)
  @IdempotentHandler({ mode: 'lease' })
  async leased(@Param('account') account: string, @Body() body: CreditRequest) {
    await this.pool.query('INSERT INTO credits (account, cents) VALUES (?, ?)', [account, body.cents]);
    return { account, cents: body.cents };
  }

  /** A credit of 70 in a transaction of the layer's, which ends with `ending` (a rollback by a throw, as the layers roll back). */
  private async inLayerTransaction(layer: 'drizzle' | 'kysely', ending: 'commit' | 'rollback', account: string): Promise<void> {
    const undone = new Error('the layer rolls back');
    const work = async (write: () => Promise<unknown>) => {
      await write();
      if (ending === 'rollback') throw undone;
    };
    try {
      if (layer === 'drizzle') {
        await this.drizzle.transaction((tx) => work(() => tx.execute(`INSERT INTO credits (account, cents) VALUES ('${account}', 70)`)));
      } else {
        await this.kysely.transaction().execute((trx) => work(() => sql`INSERT INTO credits (account, cents) VALUES (${account}, 70)`.execute(trx)));
      }
    } catch (error) {
      if (error !== undone) throw error;
    }
  }
}

/**
 * The handlers the transport contract's checks publish to on RabbitMQ: `credit.grant` writes one
 * effect once no test holds its gate (a `gates` row named by its account); `fixture.poison` writes
 * one and always throws.
 */
@Controller()
export class MariaDbMessagesController {
  constructor(@Inject(POOL) private readonly pool: Pool) {}

  @EventPattern('credit.grant')
  @IdempotentHandler()
  async grant(@Payload() payload: { account: string }) {
    await this.pool.query('SELECT name FROM gates WHERE name = ? FOR UPDATE', [payload.account]);
    await this.pool.query('INSERT INTO effects (handler, `key`) VALUES (?, ?)', ['grant', payload.account]);
  }

  @EventPattern('fixture.poison')
  @IdempotentHandler({ maxAttempts: 3 })
  async poison(@Payload() payload: { id: string }) {
    await this.pool.query('INSERT INTO effects (handler, `key`) VALUES (?, ?)', ['poison', payload.id]);
    throw new Error('poison: this message can never be processed');
  }
}

/** The app on `pool`, its store on MariaDB. */
export function mariaDbAppModule(pool: Pool) {
  @Module({
    imports: [
      IdempotencyModule.forRoot({
        dataLayer: new Mysql2PoolDataLayer({ pool }),
        purge: { interval: false },
      }),
    ],
    controllers: [MariaDbCreditsController, MariaDbMessagesController],
    providers: [{ provide: POOL, useValue: pool }],
  })
  class MariaDbAppModule {}
  return MariaDbAppModule;
}
