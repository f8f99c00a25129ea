import type { StoreDatabase } from '../../test/support/store-database.js';
import { TABLE } from './sizing.settings.js';

/** The table's size on disk, whole and by part, and per row. */
export interface StorageFigures {
  rows: number;
  /** Average length of the keys (message ids). */
  keyLength: number;
  /** Bytes: the heap (with TOAST, free space and visibility maps), each index, everything. */
  tableBytes: number;
  indexBytes: Record<string, number>;
  totalBytes: number;
  bytesPerRow: { table: number; indexes: Record<string, number>; total: number };
}

/** Reads the processed-messages table's size and its exact row count. */
export async function measureStorage(database: StoreDatabase): Promise<StorageFigures> {
  const [sizes] = await database.query<{ table_bytes: string; total_bytes: string }>(
    `SELECT pg_table_size($1::regclass) AS table_bytes, pg_total_relation_size($1::regclass) AS total_bytes`,
    [TABLE],
  );
  const indexes = await database.query<{ name: string; bytes: string }>(
    `SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS bytes FROM pg_index WHERE indrelid = $1::regclass ORDER BY 1`,
    [TABLE],
  );
  const [counted] = await database.query<{ rows: string; key_length: string }>(`SELECT count(*) AS rows, avg(length(message_id)) AS key_length FROM ${TABLE}`);
  const rows = Number(counted.rows);
  const indexBytes = Object.fromEntries(indexes.map((index) => [index.name, Number(index.bytes)]));
  const perRow = (bytes: number) => Math.round((bytes / rows) * 10) / 10;
  return {
    rows,
    keyLength: Number(counted.key_length),
    tableBytes: Number(sizes.table_bytes),
    indexBytes,
    totalBytes: Number(sizes.total_bytes),
    bytesPerRow: {
      table: perRow(Number(sizes.table_bytes)),
      indexes: Object.fromEntries(Object.entries(indexBytes).map(([name, bytes]) => [name, perRow(bytes)])),
      total: perRow(Number(sizes.total_bytes)),
    },
  };
}
