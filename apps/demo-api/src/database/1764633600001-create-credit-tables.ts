import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateCreditTables1764633600001 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE accounts (account text PRIMARY KEY, balance bigint NOT NULL)`);
    await queryRunner.query(`
      CREATE TABLE ledger_entries (
        id bigserial PRIMARY KEY,
        account text NOT NULL,
        cents integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE ledger_entries`);
    await queryRunner.query(`DROP TABLE accounts`);
  }
}
