import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { DEFAULT_OUTBOX_TABLE_NAME } from '../idempotency.constants.js';
import { toTableName } from '../data-layers/table-name.js';
import { mariaDbOutboxStatements } from './mariadb-schema-sql.js';

/**
 * Creates the outbox's tables on MariaDB (10.6 or newer), for a TypeORM data source of type
 * `mariadb` or `mysql`: the statements `mariaDbOutboxSql()` answers, which the package also ships
 * as `sql/mariadb/1796688000000-create-outbox-messages-table.sql`. Add it to your data source's
 * `migrations` when you use the outbox; for another table name, subclass it and pass the name to
 * `super()`, and give the same name as `outbox.tableName`.
 *
 * Released: its SQL must never change; a later version of the module adds a migration instead.
 */
export class CreateOutboxMessagesTableMariaDb1796688000000 implements MigrationInterface {
  constructor(private readonly tableName: string = DEFAULT_OUTBOX_TABLE_NAME) {}

  async up(queryRunner: QueryRunner): Promise<void> {
    // One statement at a time: MariaDB commits each DDL statement on its own.
    for (const statement of mariaDbOutboxStatements(this.tableName)) {
      await queryRunner.query(statement);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const table = toTableName(this.tableName, 'outbox.tableName');
    await queryRunner.query(`DROP TABLE \`${table}_keys\``);
    await queryRunner.query(`DROP TABLE \`${table}\``);
  }
}
