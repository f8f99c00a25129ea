-- nestjs-idempotent-consumer: the outbox's tables on MariaDB (10.6 or newer), for Mysql2PoolDataLayer, when you use the outbox.
-- Run it once with your migration tool; mariaDbOutboxSql(outboxTableName) answers it for another outbox table.

CREATE TABLE IF NOT EXISTS `outbox_messages` (
  seq BIGINT NOT NULL AUTO_INCREMENT,
  id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  destination VARCHAR(255) NOT NULL,
  address VARCHAR(1024) NOT NULL,
  pattern VARCHAR(1024) NULL,
  headers JSON NOT NULL,
  payload LONGTEXT NOT NULL,
  ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  attempts INT NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  last_error TEXT NULL,
  dispatched_at DATETIME(6) NULL,
  dead_lettered_at DATETIME(6) NULL,
  PRIMARY KEY (seq),
  UNIQUE KEY `outbox_messages_id_key` (id),
  KEY `outbox_messages_pending` (dispatched_at, dead_lettered_at, seq),
  KEY `outbox_messages_ordering` (ordering_key, seq),
  KEY `outbox_messages_dead_lettered` (dead_lettered_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `outbox_messages_keys` (
  ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  PRIMARY KEY (ordering_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
