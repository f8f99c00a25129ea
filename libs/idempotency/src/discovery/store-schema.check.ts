import { Injectable } from '@nestjs/common';
import { IdempotencyExplorer } from './idempotency.explorer.js';
import { IdempotencySchemaError } from '../errors/idempotency.errors.js';
import { StoreHandle } from '../store/store.handle.js';
import { MARIADB_DIALECT } from '../dialects/mariadb/mariadb.dialect.js';
import { POSTGRES_STORE } from '../leasing/lease-stores.js';
import { findMissing, type SchemaNeeds, schemaNeeds, type StoreCatalogue } from '../schema/store-schema.js';
import { SchemaBootCheck } from '../schema/schema-boot-check.js';

/**
 * Checks at application bootstrap, with one catalogue query, that the processed-messages store
 * has what the application's handlers use: the table with every column of the current shape
 * (for any handler on the built-in store) and the claim's two functions with their argument
 * types (for any handler in the transactional mode). When something lacks, the application does
 * not start: `IdempotencySchemaError` names what and the migrations to add. More than needed (a
 * column or a function a newer version's migration added during a rolling deploy) is fine. An
 * application whose handlers all lease on another store, or that has none, needs nothing and
 * sends no query. The health indicator asks again on each check, so a store dropped at runtime
 * shows there.
 *
 * @internal
 */
@Injectable()
export class StoreSchemaCheck extends SchemaBootCheck {
  private needs: SchemaNeeds = { table: false, functions: false };

  constructor(
    private readonly explorer: IdempotencyExplorer,
    private readonly store: StoreHandle,
  ) {
    super();
  }

  protected override prepare(): void {
    this.needs = schemaNeeds(
      this.explorer.discovered().map(({ handler }) => handler),
      POSTGRES_STORE,
    );
  }

  /** What the store lacks of what the handlers use, as the error to report; undefined when nothing lacks. Throws when the catalogue cannot be read. */
  async inspect(): Promise<IdempotencySchemaError | undefined> {
    if (!this.needs.table && !this.needs.functions) {
      return undefined;
    }
    const table = this.store.table;
    const {
      rows: [catalogue],
    } = await this.store.query<StoreCatalogue>(this.store.dialect.catalogue.catalogueStatement, this.store.dialect.catalogue.catalogueParameters(table));
    // A driver hands an aggregated JSON value over as its text where the column is not of a JSON type (mysql2 on MariaDB).
    const columns = typeof catalogue.columns === 'string' ? (JSON.parse(catalogue.columns) as StoreCatalogue['columns']) : catalogue.columns;
    const { missing, migrations } = findMissing(table, { ...catalogue, columns }, this.needs);
    return missing.length === 0 ? undefined : new IdempotencySchemaError(table, missing, migrations, { sqlFiles: this.store.adviseSqlFiles, mariaDb: this.store.dialect === MARIADB_DIALECT });
  }
}
