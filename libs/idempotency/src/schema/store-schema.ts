import type { IdempotencyMode } from '../options/handler-values.js';
import { claimSignature, recordSignature } from '../dialects/postgres/store-schema.queries.js';

/** The library's migrations, by what they create. */
const CREATE_TABLE = 'CreateProcessedMessagesTable1764633600000';
const CREATE_FUNCTIONS = 'CreateProcessedMessagesFunctions1796256000000';
const UPGRADE = 'UpgradeProcessedMessagesTable1796342400000';

/** What of the store an application's handlers use. */
export interface SchemaNeeds {
  /** The table with every column of the current shape: any handler on the built-in store. */
  readonly table: boolean;
  /** The claim's two functions: any handler in the transactional mode. */
  readonly functions: boolean;
}

/**
 * What the handlers need: the table when one keeps its messages in it (the transactional mode, or
 * a lease on the `postgres` store), the functions when one claims in its transaction. An
 * application whose handlers all lease on another store, or that has none, needs nothing.
 */
export function schemaNeeds(handlers: readonly { readonly mode: IdempotencyMode; readonly store: string }[], postgresStore: string): SchemaNeeds {
  return {
    table: handlers.some(({ mode, store }) => mode === 'transaction' || store === postgresStore),
    functions: handlers.some(({ mode }) => mode === 'transaction'),
  };
}

/** A column as the catalogue describes it. */
export interface CatalogueColumn {
  readonly name: string;
  /** `format_type()`: `bytea`, `character(64)`, `timestamp with time zone`. */
  readonly type: string;
  readonly notNull: boolean;
}

/** The catalogue's answer to `catalogueStatement`. */
export interface StoreCatalogue {
  readonly tableFound: boolean;
  readonly columns: readonly CatalogueColumn[];
  readonly claimFound: boolean;
  readonly recordFound: boolean;
}

/** The columns the module reads and writes; a type or nullability only where an earlier released shape differs. */
const REQUIRED_COLUMNS: readonly { name: string; type?: string; nullable?: true }[] = [
  { name: 'consumer' },
  { name: 'message_id' },
  { name: 'sender' },
  { name: 'fingerprint', nullable: true },
  { name: 'response_status' },
  { name: 'response_headers' },
  { name: 'response_body', type: 'bytea' },
  { name: 'processed_at' },
  { name: 'expires_at' },
  { name: 'lease_token' },
  { name: 'lease_expires_at' },
];

/** What `needs` asks of the store and `catalogue` does not have, with the migrations that create it; none when nothing lacks. */
export function findMissing(table: string, catalogue: StoreCatalogue, needs: SchemaNeeds): { missing: string[]; migrations: string[] } {
  const missing: string[] = [];
  const migrations = new Set<string>();
  if (!needs.table && !needs.functions) {
    return { missing, migrations: [] };
  }
  if (!catalogue.tableFound) {
    missing.push(`the table ${table} does not exist`);
    [CREATE_TABLE, CREATE_FUNCTIONS, UPGRADE].forEach((name) => migrations.add(name));
  } else if (needs.table) {
    const columns = new Map(catalogue.columns.map((column) => [column.name, column]));
    for (const required of REQUIRED_COLUMNS) {
      const found = columns.get(required.name);
      if (!found) {
        missing.push(`the column ${required.name} does not exist`);
      } else if (required.type !== undefined && found.type !== required.type) {
        missing.push(`the column ${required.name} is ${found.type}, not ${required.type}`);
      } else if (required.nullable && found.notNull) {
        missing.push(`the column ${required.name} is NOT NULL`);
      }
    }
    if (missing.length > 0) {
      migrations.add(UPGRADE);
    }
  }
  if (needs.functions) {
    const functions = [
      [catalogue.claimFound, claimSignature(table)],
      [catalogue.recordFound, recordSignature(table)],
    ] as const;
    for (const [found, signature] of functions) {
      if (!found) {
        missing.push(`the function ${signature.replaceAll('"', '')} does not exist`);
        migrations.add(CREATE_FUNCTIONS).add(UPGRADE);
      }
    }
  }
  return { missing, migrations: [CREATE_TABLE, CREATE_FUNCTIONS, UPGRADE].filter((name) => migrations.has(name)) };
}

/** What a delivery that found the function `which` missing (PostgreSQL 42883) reports. */
export function functionMissing(table: string, which: 'claim' | 'record'): { missing: string[]; migrations: string[] } {
  const catalogue = { tableFound: true, columns: [], claimFound: which !== 'claim', recordFound: which !== 'record' };
  return findMissing(table, catalogue, { table: false, functions: true });
}
