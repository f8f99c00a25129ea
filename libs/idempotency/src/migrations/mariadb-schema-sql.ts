import { toTableName } from '../data-layers/table-name.js';
import { DEFAULT_OUTBOX_TABLE_NAME, DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/**
 * The processed-messages table on MariaDB (10.6 or newer), as one `CREATE TABLE`: the store of
 * `Mysql2PoolDataLayer`. The consumer and the key compare byte for byte (`utf8mb4_nopad_bin`:
 * `Order-1` and `order-1`, `k` and `k ` are distinct keys); times are `DATETIME(6)` of the
 * server's clock. The package ships it for the default table as
 * `sql/mariadb/1796601600000-create-processed-messages-table.sql`.
 *
 * @param tableName the table's name, as given to `IdempotencyModule.forRoot({ tableName })`.
 * @throws IdempotencyOptionsError when the name is not a plain identifier of at most 56 characters.
 */
export function mariaDbSchemaSql(tableName: string = DEFAULT_TABLE_NAME): string {
  const table = toTableName(tableName);
  return (
    `CREATE TABLE \`${table}\` (\n` +
    '  consumer VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n' +
    '  message_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n' +
    '  sender VARCHAR(255) NOT NULL,\n' +
    '  fingerprint CHAR(64) NULL,\n' +
    '  response_status SMALLINT NULL,\n' +
    '  response_headers JSON NULL,\n' +
    '  response_body LONGBLOB NULL,\n' +
    '  processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n' +
    '  expires_at DATETIME(6) NOT NULL,\n' +
    '  lease_token CHAR(36) NULL,\n' +
    '  lease_expires_at DATETIME(6) NULL,\n' +
    '  PRIMARY KEY (consumer, message_id),\n' +
    `  KEY \`${table}_expires_at_idx\` (expires_at)\n` +
    ') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n'
  );
}

/**
 * The outbox on MariaDB (10.6 or newer): its table and the table of its ordering keys
 * (`<table>_keys`, a row per key, which the writers of a key lock in turn so that its messages are
 * numbered in the order their transactions commit), two `CREATE TABLE IF NOT EXISTS` statements each
 * ended by `;`, so that a run cut between them can be run again. Ids and ordering keys compare byte for byte (`utf8mb4_nopad_bin`); `headers` is JSON text.
 * The package ships it for the default table as `sql/mariadb/1796688000000-create-outbox-messages-table.sql`.
 *
 * @param outboxTableName the outbox table's name, as given as `outbox.tableName`.
 * @throws IdempotencyOptionsError when the name is not a plain identifier of at most 56 characters.
 */
export function mariaDbOutboxSql(outboxTableName: string = DEFAULT_OUTBOX_TABLE_NAME): string {
  return mariaDbOutboxStatements(outboxTableName)
    .map((statement) => `${statement};\n`)
    .join('\n');
}

/** The statements of `mariaDbOutboxSql()`, one by one (MariaDB's DDL is not transactional: a migration runs each on its own). @internal */
export function mariaDbOutboxStatements(outboxTableName: string = DEFAULT_OUTBOX_TABLE_NAME): string[] {
  const table = toTableName(outboxTableName, 'outbox.tableName');
  const text = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin';
  return [
    `CREATE TABLE IF NOT EXISTS \`${table}\` (\n` +
      '  seq BIGINT NOT NULL AUTO_INCREMENT,\n' +
      `  id VARCHAR(255) ${text} NOT NULL,\n` +
      '  destination VARCHAR(255) NOT NULL,\n' +
      '  address VARCHAR(1024) NOT NULL,\n' +
      '  pattern VARCHAR(1024) NULL,\n' +
      '  headers JSON NOT NULL,\n' +
      '  payload LONGTEXT NOT NULL,\n' +
      `  ordering_key VARCHAR(255) ${text} NULL,\n` +
      '  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n' +
      '  attempts INT NOT NULL DEFAULT 0,\n' +
      '  next_attempt_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n' +
      '  last_error TEXT NULL,\n' +
      '  dispatched_at DATETIME(6) NULL,\n' +
      '  dead_lettered_at DATETIME(6) NULL,\n' +
      '  PRIMARY KEY (seq),\n' +
      `  UNIQUE KEY \`${table}_id_key\` (id),\n` +
      `  KEY \`${table}_pending\` (dispatched_at, dead_lettered_at, seq),\n` +
      `  KEY \`${table}_ordering\` (ordering_key, seq),\n` +
      `  KEY \`${table}_dead_lettered\` (dead_lettered_at)\n` +
      ') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4',
    `CREATE TABLE IF NOT EXISTS \`${table}_keys\` (\n` + `  ordering_key VARCHAR(255) ${text} NOT NULL,\n` + '  PRIMARY KEY (ordering_key)\n' + ') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4',
  ];
}
