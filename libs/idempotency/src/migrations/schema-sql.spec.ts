import { jest } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { IdempotencyError, IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { CreateKafkaOffsetsTable1796515200000 } from './create-kafka-offsets-table.migration.js';
import { CreateOutboxMessagesTable1796428800000 } from './create-outbox-messages-table.migration.js';
import { CreateProcessedMessagesFunctions1796256000000 } from './create-processed-messages-functions.migration.js';
import { CreateProcessedMessagesTable1764633600000 } from './create-processed-messages-table.migration.js';
import { schemaSql } from './schema-sql.js';
import { mariaDbOutboxSql, mariaDbSchemaSql } from './mariadb-schema-sql.js';
import { UpgradeProcessedMessagesTable1796342400000 } from './upgrade-processed-messages-table.migration.js';

/** The SQL the package ships: libs/idempotency/sql/. */
const SHIPPED = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sql');

const MIGRATIONS = [
  CreateProcessedMessagesTable1764633600000,
  CreateProcessedMessagesFunctions1796256000000,
  UpgradeProcessedMessagesTable1796342400000,
  CreateOutboxMessagesTable1796428800000,
  CreateKafkaOffsetsTable1796515200000,
];

/** The table each migration creates or changes, by default. */
const TABLE_OF = new Map<unknown, string>([
  [CreateOutboxMessagesTable1796428800000, 'outbox_messages'],
  [CreateKafkaOffsetsTable1796515200000, 'kafka_offsets'],
]);

/** `CreateProcessedMessagesTable1764633600000` -> `1764633600000-create-processed-messages-table`. */
const nameOf = (className: string) => {
  const [, words, timestamp] = /^(\D+)(\d+)$/.exec(className)!;
  return `${timestamp}-${words.replace(/(?<=[a-z])(?=[A-Z])/g, '-').toLowerCase()}`;
};

/** What `migration`'s up() sends, each statement's text, through a plain mock of the QueryRunner. */
async function statementsOf(migration: MigrationInterface): Promise<string[]> {
  const query = jest.fn(async () => []);
  await migration.up({ query } as unknown as QueryRunner);
  return query.mock.calls.map((call) => (call as unknown[])[0] as string);
}

describe('schemaSql()', () => {
  it("gives the library's migrations in the order they run, each named by its class's timestamp and name", async () => {
    expect((await schemaSql()).map((migration) => migration.name)).toEqual([
      '1764633600000-create-processed-messages-table',
      '1796256000000-create-processed-messages-functions',
      '1796342400000-upgrade-processed-messages-table',
      '1796428800000-create-outbox-messages-table',
      '1796515200000-create-kafka-offsets-table',
    ]);
    expect((await schemaSql()).map((migration) => migration.name)).toEqual(MIGRATIONS.map((migration) => nameOf(migration.name)));
  });

  it("holds each migration's statements as its up() sends them, in order, each ended by a semicolon, after a comment naming the migration", async () => {
    const migrations = await schemaSql();
    for (const [index, migration] of MIGRATIONS.entries()) {
      const { name, sql } = migrations[index];
      const statements = await statementsOf(new migration());
      expect(statements.length).toBeGreaterThan(0);
      expect(sql.split('\n').slice(0, 5)).toEqual([
        `-- nestjs-idempotent-consumer: migration ${name}`,
        `-- (the TypeORM migration ${migration.name} as SQL) for the table "${TABLE_OF.get(migration) ?? 'processed_messages'}".`,
        "-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.",
        '-- Never edit it: a later version of the library adds new migrations instead.',
        '',
      ]);
      let at = 0;
      for (const statement of statements) {
        const found = sql.indexOf(`${statement.trim()};\n`, at);
        expect({ name, statement, found: found >= at }).toEqual({ name, statement, found: true });
        at = found + statement.trim().length;
      }
    }
  });

  it('is what the package ships in sql/, file for file, so a released file is never edited unnoticed', async () => {
    const migrations = await schemaSql();
    expect(readdirSync(SHIPPED).filter((file) => file.endsWith('.sql')).sort()).toEqual(migrations.map((migration) => `${migration.name}.sql`));
    for (const { name, sql } of migrations) {
      expect({ name, sql: readFileSync(join(SHIPPED, `${name}.sql`), 'utf8') }).toEqual({ name, sql });
    }
  });

  it("ships MariaDB's tables as sql/mariadb/, the SQL mariaDbSchemaSql() and mariaDbOutboxSql() answer under a header", () => {
    expect(readdirSync(join(SHIPPED, 'mariadb')).sort()).toEqual(['1796601600000-create-processed-messages-table.sql', '1796688000000-create-outbox-messages-table.sql']);
    const outbox = readFileSync(join(SHIPPED, 'mariadb', '1796688000000-create-outbox-messages-table.sql'), 'utf8');
    expect(outbox.startsWith('-- nestjs-idempotent-consumer: ')).toBe(true);
    expect(outbox.endsWith(`\n\n${mariaDbOutboxSql()}`)).toBe(true);
    expect(mariaDbOutboxSql('billing_outbox')).toBe(mariaDbOutboxSql().replaceAll('outbox_messages', 'billing_outbox'));
    const shipped = readFileSync(join(SHIPPED, 'mariadb', '1796601600000-create-processed-messages-table.sql'), 'utf8');
    expect(shipped.startsWith('-- nestjs-idempotent-consumer: ')).toBe(true);
    expect(shipped.endsWith(`\n\n${mariaDbSchemaSql()}`)).toBe(true);
    expect(mariaDbSchemaSql('billing_claims')).toBe(mariaDbSchemaSql().replaceAll('processed_messages', 'billing_claims'));
  });

  it("names another table everywhere the default's SQL names processed_messages, and nowhere else", async () => {
    const defaults = await schemaSql();
    const custom = await schemaSql('billing_claims');
    expect(custom.map((migration) => migration.name)).toEqual(defaults.map((migration) => migration.name));
    for (const [index, { sql }] of custom.entries()) {
      expect(sql).not.toContain('processed_messages');
      expect(sql).toBe(defaults[index].sql.replaceAll('processed_messages', 'billing_claims'));
    }
    expect(await schemaSql('billing_claims')).toEqual(custom);
  });

  it("names another outbox table everywhere the default's SQL names outbox_messages, and touches no other migration", async () => {
    const defaults = await schemaSql();
    const custom = await schemaSql(undefined, 'billing_outbox');
    for (const [index, { name, sql }] of custom.entries()) {
      expect(sql).not.toContain('outbox_messages');
      expect({ name, sql }).toEqual({ name, sql: defaults[index].sql.replaceAll('outbox_messages', 'billing_outbox') });
    }
    await expect(schemaSql(undefined, 'billing-outbox')).rejects.toThrow('outbox.tableName must be a plain PostgreSQL identifier');
  });

  it.each([['billing-claims'], ['1claims'], ['claims"; DROP TABLE accounts; --'], ['x'.repeat(57)], ['']])(
    'refuses the table name %j as the module does, with IdempotencyOptionsError',
    async (tableName) => {
      await expect(schemaSql(tableName)).rejects.toThrow(IdempotencyOptionsError);
      await expect(schemaSql(tableName)).rejects.toThrow('tableName must be a plain PostgreSQL identifier');
    },
  );

  it('takes the longest name the module takes, 56 characters', async () => {
    const longest = `t${'x'.repeat(55)}`;
    expect((await schemaSql(longest))[1].sql).toContain(`"${longest}_record"`);
  });

  describe('a migration that sends anything but query(text)', () => {
    afterEach(() => jest.restoreAllMocks());

    it('fails on a query with parameters, naming the migration', async () => {
      jest.spyOn(UpgradeProcessedMessagesTable1796342400000.prototype, 'up').mockImplementation(async (queryRunner) => {
        await queryRunner.query('SELECT $1', [1]);
      });
      await expect(schemaSql()).rejects.toThrow(IdempotencyError);
      await expect(schemaSql()).rejects.toThrow('UpgradeProcessedMessagesTable1796342400000.up() used query() with parameters');
    });

    it("fails on the QueryRunner's schema API, naming what was used", async () => {
      jest.spyOn(CreateProcessedMessagesTable1764633600000.prototype, 'up').mockImplementation(async (queryRunner) => {
        await queryRunner.dropTable('processed_messages');
      });
      await expect(schemaSql()).rejects.toThrow('CreateProcessedMessagesTable1764633600000.up() used `dropTable` of its QueryRunner');
    });
  });
});
