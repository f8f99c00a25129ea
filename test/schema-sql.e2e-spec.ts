import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  UpgradeProcessedMessagesTable1796342400000,
  CreateOutboxMessagesTable1796428800000,
  CreateKafkaOffsetsTable1796515200000,
} from 'nestjs-idempotent-consumer';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DataSource, type MigrationInterface } from 'typeorm';
import { run } from './support/scratch-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** The command `nestjs-idempotent-consumer-sql`, as the package's `bin` names it, built by `npm run build`. */
const CLI = resolve('libs/idempotency/dist/cli/schema-sql.cli.js');
/** The SQL files the package ships. */
const SHIPPED = resolve('libs/idempotency/sql');

const LIBRARY_MIGRATIONS = [
  CreateProcessedMessagesTable1764633600000,
  CreateProcessedMessagesFunctions1796256000000,
  UpgradeProcessedMessagesTable1796342400000,
  CreateOutboxMessagesTable1796428800000,
  CreateKafkaOffsetsTable1796515200000,
];

// The library's migrations for another table, subclassed as the guide says.
class CreateBillingClaims1796256000001 extends CreateProcessedMessagesTable1764633600000 {
  constructor() {
    super('billing_claims');
  }
}
class CreateBillingClaimsFunctions1796256000002 extends CreateProcessedMessagesFunctions1796256000000 {
  constructor() {
    super('billing_claims');
  }
}
class UpgradeBillingClaims1796342400001 extends UpgradeProcessedMessagesTable1796342400000 {
  constructor() {
    super('billing_claims');
  }
}

/** Runs the command with `args`; never rejects, whatever its exit code. */
function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], (error, stdout, stderr) => {
      done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The shipped files, in the order of their names. */
async function shippedFiles(): Promise<{ name: string; sql: string }[]> {
  const names = (await readdir(SHIPPED)).filter((name) => name.endsWith('.sql')).sort();
  return Promise.all(names.map(async (name) => ({ name, sql: await readFile(join(SHIPPED, name), 'utf8') })));
}

/**
 * What the catalogue says of the store in `db`: the relations of the public schema (but TypeORM's
 * own `migrations` table and what belongs to it), the table's columns with their types,
 * nullability and defaults, its constraints and indexes, and every function of the schema as
 * `pg_get_functiondef` writes it.
 */
async function storeOf(db: TestDatabase, table: string) {
  const relation = `"${table}"`;
  return {
    relations: await db.query(
      `SELECT c.relname AS name, c.relkind AS kind, c.relpersistence AS persistence
         FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relname <> 'migrations' AND c.relname NOT LIKE 'migrations\\_%'
          AND NOT EXISTS (SELECT FROM pg_index i WHERE i.indexrelid = c.oid AND i.indrelid = to_regclass('migrations'))
        ORDER BY c.relname`,
    ),
    columns: await db.query(
      `SELECT a.attnum AS position, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull",
              pg_get_expr(d.adbin, d.adrelid) AS "default", a.attidentity AS identity, a.attgenerated AS generated
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum`,
      [relation],
    ),
    constraints: await db.query(
      `SELECT conname AS name, contype AS kind, pg_get_constraintdef(oid) AS definition
         FROM pg_constraint WHERE conrelid = to_regclass($1) ORDER BY conname`,
      [relation],
    ),
    indexes: await db.query(
      `SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1 ORDER BY indexname`,
      [table],
    ),
    functions: await db.query<{ signature: string; definition: string }>(
      `SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS definition
         FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1`,
    ),
  };
}

describe('the SQL of the migrations, for migration tools other than TypeORM', () => {
  const databases: TestDatabase[] = [];
  const database = async () => {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  };
  /** A database of its own on which TypeORM ran `migrations`. */
  const migratedByTypeOrm = async (migrations: (new () => MigrationInterface)[]) => {
    const db = await database();
    const dataSource = await new DataSource({ type: 'postgres', url: db.url, migrations, migrationsRun: true }).initialize();
    await dataSource.destroy();
    return db;
  };
  /** Runs each script through pg as one query, in order. */
  const apply = async (db: TestDatabase, scripts: string[]) => {
    const client = await db.connect();
    try {
      for (const script of scripts) {
        await client.query(script);
      }
    } finally {
      await client.end();
    }
  };

  beforeAll(() => {
    if (!existsSync(CLI)) {
      throw new Error(`${CLI} is missing: build the library first ('npm test' does)`);
    }
  });

  afterAll(async () => {
    await Promise.all(databases.map((db) => db.drop()));
  });

  it('ships one file per migration, and the command prints them in order, each once', async () => {
    const files = await shippedFiles();
    expect(files.map((file) => file.name)).toEqual([
      '1764633600000-create-processed-messages-table.sql',
      '1796256000000-create-processed-messages-functions.sql',
      '1796342400000-upgrade-processed-messages-table.sql',
      '1796428800000-create-outbox-messages-table.sql',
      '1796515200000-create-kafka-offsets-table.sql',
    ]);
    for (const { sql } of files) {
      expect(sql.startsWith('-- nestjs-idempotent-consumer: migration ')).toBe(true);
    }
    expect(await cli()).toEqual({ code: 0, stdout: files.map((file) => file.sql).join('\n'), stderr: '' });
  });

  it("packs the sql/ files and the command's script, which the package's bin names", async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json'], { cwd: resolve('libs/idempotency') });
    const [packed] = JSON.parse(stdout) as { files: { path: string }[] }[];
    const paths = packed.files.map((file) => file.path);
    const manifest = JSON.parse(await readFile(resolve('libs/idempotency/package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(manifest.bin).toEqual({ 'nestjs-idempotent-consumer-sql': 'dist/cli/schema-sql.cli.js' });
    expect(paths).toEqual(expect.arrayContaining([...(await shippedFiles()).map((file) => `sql/${file.name}`), 'dist/cli/schema-sql.cli.js']));
    expect((await readFile(CLI, 'utf8')).startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('makes, from the shipped files run with pg in order, the store the TypeORM migrations make', async () => {
    const expected = await storeOf(await migratedByTypeOrm(LIBRARY_MIGRATIONS), 'processed_messages');
    const db = await database();
    await apply(db, (await shippedFiles()).map((file) => file.sql));

    const store = await storeOf(db, 'processed_messages');
    expect(store).toEqual(expected);
    expect(store.functions.map((fn) => fn.signature)).toEqual([
      'processed_messages_claim(text,text,text,text,bigint)',
      'processed_messages_record(text,text,integer,json,bytea)',
    ]);
    expect(store.indexes.map((index) => index.name)).toEqual(['processed_messages_expires_at_idx', 'processed_messages_pkey']);
    expect(store.columns).toHaveLength(11);
    // And the functions work.
    const claim = `SELECT processed_messages_claim('SchemaSqlSpec.handle', 'key-1', 'default', NULL, 60000) AS claimed`;
    expect(await db.query(claim)).toEqual([{ claimed: true }]);
    expect(await db.query(claim)).toEqual([{ claimed: false }]);
    const outbox = await storeOf(db, 'outbox_messages');
    expect(outbox).toEqual(await storeOf(await migratedByTypeOrm(LIBRARY_MIGRATIONS), 'outbox_messages'));
    expect(outbox.columns).toHaveLength(14);
    const positions = await storeOf(db, 'kafka_offsets');
    expect(positions).toEqual(await storeOf(await migratedByTypeOrm(LIBRARY_MIGRATIONS), 'kafka_offsets'));
    expect(positions.columns).toHaveLength(4);
  });

  it('makes, from what --table billing_claims prints, the store of the migrations subclassed with that name', async () => {
    const typeOrm = await migratedByTypeOrm([
      CreateBillingClaims1796256000001,
      CreateBillingClaimsFunctions1796256000002,
      UpgradeBillingClaims1796342400001,
      CreateOutboxMessagesTable1796428800000,
      CreateKafkaOffsetsTable1796515200000,
    ]);
    const expected = await storeOf(typeOrm, 'billing_claims');
    const printed = await cli('--table', 'billing_claims');
    expect(printed).toMatchObject({ code: 0, stderr: '' });
    expect(printed.stdout).not.toContain('processed_messages');
    const db = await database();
    await apply(db, [printed.stdout]);

    const store = await storeOf(db, 'billing_claims');
    expect(store).toEqual(expected);
    expect(store.functions.map((fn) => fn.signature)).toEqual([
      'billing_claims_claim(text,text,text,text,bigint)',
      'billing_claims_record(text,text,integer,json,bytea)',
    ]);
    expect(store.constraints).toContainEqual({ name: 'billing_claims_pkey', kind: 'p', definition: 'PRIMARY KEY (consumer, message_id)' });
  });

  it('prints with --from only the migrations after the one named, which bring a database that ran it to the same store', async () => {
    const files = await shippedFiles();
    expect(await cli('--from', '1796256000000')).toEqual({ code: 0, stdout: `${files[2].sql}\n${files[3].sql}\n${files[4].sql}`, stderr: '' });
    expect(await cli('--from', '1764633600000-create-processed-messages-table')).toEqual({
      code: 0,
      stdout: `${files[1].sql}\n${files[2].sql}\n${files[3].sql}\n${files[4].sql}`,
      stderr: '',
    });
    expect(await cli('--from', '1796342400000')).toEqual({ code: 0, stdout: `${files[3].sql}\n${files[4].sql}`, stderr: '' });
    expect(await cli('--from', '1796428800000')).toEqual({ code: 0, stdout: files[4].sql, stderr: '' });
    expect(await cli('--from', '1796515200000')).toEqual({
      code: 0,
      stdout: '',
      stderr: '-- nestjs-idempotent-consumer-sql: no migration after 1796515200000-create-kafka-offsets-table: nothing to run.\n',
    });

    const expected = await storeOf(await migratedByTypeOrm(LIBRARY_MIGRATIONS), 'processed_messages');
    const db = await database();
    await apply(db, [files[0].sql, files[1].sql]);
    await apply(db, [(await cli('--from', '1796256000000')).stdout]);
    expect(await storeOf(db, 'processed_messages')).toEqual(expected);
  });

  it('leaves out the outbox table with --without-outbox, also after --from', async () => {
    const files = await shippedFiles();
    expect(await cli('--without-outbox')).toEqual({ code: 0, stdout: `${files[0].sql}\n${files[1].sql}\n${files[2].sql}\n${files[4].sql}`, stderr: '' });
    expect(await cli('--without-outbox', '--from', '1796256000000')).toEqual({ code: 0, stdout: `${files[2].sql}\n${files[4].sql}`, stderr: '' });
    expect(await cli('--without-outbox', '--from', '1796428800000')).toEqual({ code: 0, stdout: files[4].sql, stderr: '' });
    expect(await cli('--without-outbox', '--from', '1796515200000')).toEqual({
      code: 0,
      stdout: '',
      stderr: '-- nestjs-idempotent-consumer-sql: no migration after 1796515200000-create-kafka-offsets-table: nothing to run.\n',
    });
  });

  it('refuses a bad table name, an unknown --from and an unknown option, saying why and printing no SQL', async () => {
    expect(await cli('--table', 'billing-claims')).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'nestjs-idempotent-consumer-sql: tableName must be a plain PostgreSQL identifier (letters, digits, underscores) ' +
        'of at most 56 characters; got "billing-claims".\n',
    });
    expect(await cli('--from', '1796256000001')).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'nestjs-idempotent-consumer-sql: --from "1796256000001" is none of the library\'s migrations; they are, in order:\n' +
        '  1764633600000-create-processed-messages-table\n  1796256000000-create-processed-messages-functions\n  1796342400000-upgrade-processed-messages-table\n' +
        '  1796428800000-create-outbox-messages-table\n  1796515200000-create-kafka-offsets-table\n',
    });
    const unknown = await cli('--tabel', 'billing_claims');
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
    expect(unknown.stderr).toContain("Unknown option '--tabel'");
    expect(unknown.stderr).toContain('Run it with --help for its options.');
    const help = await cli('--help');
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('--from <timestamp>');
  });
});
