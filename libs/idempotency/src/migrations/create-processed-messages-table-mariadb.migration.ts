import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';
import { toTableName } from '../data-layers/table-name.js';
import { mariaDbSchemaSql } from './mariadb-schema-sql.js';

/**
 * Creates the processed-messages table on MariaDB (10.6 or newer), for a TypeORM data source of
 * type `mariadb` or `mysql`: the statement `mariaDbSchemaSql()` answers, which the package also
 * ships as `sql/mariadb/1796601600000-create-processed-messages-table.sql`. Add it to your data
 * source's `migrations`; for another table name, subclass it:
 *
 * @example
 * ```ts
 * export class CreateBillingProcessed1796601600001 extends CreateProcessedMessagesTableMariaDb1796601600000 {
 *   constructor() { super('billing_processed'); }
 * }
 * ```
 */
export class CreateProcessedMessagesTableMariaDb1796601600000 implements MigrationInterface {
  constructor(private readonly tableName: string = DEFAULT_TABLE_NAME) {}

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(mariaDbSchemaSql(this.tableName));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE \`${toTableName(this.tableName)}\``);
  }
}
