import { toTableName } from '../data-layers/table-name.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

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
