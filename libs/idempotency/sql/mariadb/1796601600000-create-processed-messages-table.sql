-- nestjs-idempotent-consumer: the processed-messages table on MariaDB (10.6 or newer), for Mysql2PoolDataLayer.
-- Run it once with your migration tool; mariaDbSchemaSql(tableName) answers it for another table.

CREATE TABLE `processed_messages` (
  consumer VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  message_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  sender VARCHAR(255) NOT NULL,
  fingerprint CHAR(64) NULL,
  response_status SMALLINT NULL,
  response_headers JSON NULL,
  response_body LONGBLOB NULL,
  processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  expires_at DATETIME(6) NOT NULL,
  lease_token CHAR(36) NULL,
  lease_expires_at DATETIME(6) NULL,
  PRIMARY KEY (consumer, message_id),
  KEY `processed_messages_expires_at_idx` (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
