import { Injectable } from '@nestjs/common';
import type { TransactionStatements } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter, NestedEnding } from 'nestjs-idempotent-consumer/testing';
import { KnexDataLayer } from './knex.data-layer.js';

/** A rollback the writer asks for, thrown out of knex's transaction callback and caught after it. */
class NestedRollback extends Error {}

/** The credits of the contract's service, written through knex as the application writes: `layer.db`. */
@Injectable()
export class KnexWriter implements DataLayerWriter {
  constructor(private readonly layer: KnexDataLayer) {}

  async credit(account: string, cents: number) {
    await this.layer.db('layer_credits').insert({ account, cents });
  }

  async creditNested(account: string, cents: number, ending: NestedEnding) {
    await this.layer.db
      .transaction(async (trx) => {
        await trx('layer_credits').insert({ account, cents });
        if (ending === 'rollback') throw new NestedRollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof NestedRollback)) throw error;
      });
  }

  async commitItself() {
    await this.layer.db.raw('COMMIT');
  }

  async creditReturningId(account: string, cents: number) {
    const { rows } = await this.layer.db.raw<{ rows: { id: string }[] }>('INSERT INTO layer_credits (account, cents) VALUES (?, ?) RETURNING id::text AS id', [account, cents]);
    return rows[0].id;
  }

  async findCredit(id: string) {
    return (await this.layer.db('layer_credits').where({ id }).first()) !== undefined;
  }

  async waitAtGate(gate: string) {
    await this.layer.db.raw('SELECT name FROM gates WHERE name = ? FOR UPDATE', [gate]);
  }

  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>) {
    return this.layer.db.transaction((trx) =>
      work(
        // knex.raw() takes a ? for a binding: the module's SQL has none.
        (sql) => trx.raw(sql.replaceAll('?', '\\?')),
        async (account, cents) => void (await trx('layer_credits').insert({ account, cents })),
      ),
    );
  }
}
