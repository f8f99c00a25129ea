import type { INestApplication } from '@nestjs/common';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { hash } from 'node:crypto';
import { DataSource, type MigrationInterface } from 'typeorm';
import { CreateCreditTables1764633600001 } from '../apps/demo-api/src/database/1764633600001-create-credit-tables.js';
import { EXPIRES_INDEX, FUNCTIONS, released, TABLE_0_2_0, TABLE_FIRST, TABLE_LEASES } from './fixtures/released-migrations.js';
import { LeasedNotesController, LeasedNotesModule } from './fixtures/store-schema.module.js';
import { startDemoApp } from './support/demo-app.js';
import { postJson } from './support/post-json.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** The demo's data source migrations as a user of that version had them. */
const VERSIONS = {
  'the first release (fingerprint NOT NULL, json body)': {
    migrations: [released('CreateProcessedMessagesTable1764633600000', [TABLE_FIRST, EXPIRES_INDEX])],
    shape: 'first' as const,
  },
  '0.2.0 (bytea body, no lease columns)': {
    migrations: [released('CreateProcessedMessagesTable1764633600000', [TABLE_0_2_0, EXPIRES_INDEX])],
    shape: 'bytea' as const,
  },
  'the lease columns, without the functions': {
    migrations: [released('CreateProcessedMessagesTable1764633600000', [TABLE_LEASES, EXPIRES_INDEX])],
    shape: 'bytea' as const,
  },
  'the lease columns and the functions': {
    migrations: [
      released('CreateProcessedMessagesTable1764633600000', [TABLE_LEASES, EXPIRES_INDEX]),
      released('CreateProcessedMessagesFunctions1796256000000', FUNCTIONS),
    ],
    shape: 'bytea' as const,
  },
};

/** This version's list, the demo's own. */
const CURRENT_MIGRATIONS = [
  CreateProcessedMessagesTable1764633600000,
  CreateProcessedMessagesFunctions1796256000000,
  UpgradeProcessedMessagesTable1796342400000,
  CreateCreditTables1764633600001,
];

const sha256 = (text: string) => hash('sha256', text, 'hex');

async function runMigrations(url: string, migrations: (new () => MigrationInterface)[]): Promise<void> {
  const dataSource = await new DataSource({ type: 'postgres', url, migrations, migrationsRun: true }).initialize();
  await dataSource.destroy();
}

/** What the catalogue says of the store: columns (by name: a column added later comes last, which no statement minds), indexes, functions and their settings. */
async function catalogue(db: TestDatabase) {
  return db.query(
    `SELECT (SELECT json_agg(json_build_object('column', attname, 'type', format_type(atttypid, atttypmod), 'notNull', attnotnull) ORDER BY attname)
               FROM pg_attribute WHERE attrelid = 'processed_messages'::regclass AND attnum > 0 AND NOT attisdropped) AS columns,
            (SELECT json_agg(indexdef ORDER BY indexname) FROM pg_indexes WHERE tablename = 'processed_messages') AS indexes,
            (SELECT json_agg(json_build_object('function', p.oid::regprocedure::text, 'source', prosrc, 'config', proconfig) ORDER BY proname)
               FROM pg_proc p WHERE proname LIKE 'processed_messages\\_%') AS functions`,
  );
}

describe.each(Object.entries(VERSIONS))('a database created by %s, upgraded by the current migrations', (_version, { migrations, shape }) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  /** The bytes the first delivery's client received. */
  const sent = '{"account":"acc-before","cents":500,"balance":500}';
  const body = { account: 'acc-before', cents: 500 };

  beforeAll(async () => {
    db = await createTestDatabase();
    await runMigrations(db.url, [...migrations, CreateCreditTables1764633600001]);
    // The credit processed before the upgrade, with its effect, as that version wrote both.
    await db.query(`INSERT INTO accounts (account, balance) VALUES ('acc-before', 500)`);
    await db.query(`INSERT INTO ledger_entries (account, cents) VALUES ('acc-before', 500)`);
    if (shape === 'first') {
      // That version's fingerprint covered the URL and the body, its record the handler's value as JSON.
      await db.query(
        `INSERT INTO processed_messages (consumer, message_id, sender, fingerprint, response_status, response_body, expires_at)
         VALUES ('CreditsController.grant', 'key-before', 'default', $1, 201, $2::json, now() + interval '7 days')`,
        [sha256(`{"body":${JSON.stringify(body)},"url":"/credits"}`), sent],
      );
    } else {
      await db.query(
        `INSERT INTO processed_messages (consumer, message_id, sender, fingerprint, response_status, response_headers, response_body, expires_at)
         VALUES ('CreditsController.grant', 'key-before', 'default', $1, 201, '{"content-type":"application/json; charset=utf-8"}', $2, now() + interval '7 days')`,
        [sha256(`{"body":${JSON.stringify(body)},"method":"POST","url":"/credits"}`), Buffer.from(sent)],
      );
    }
    await runMigrations(db.url, CURRENT_MIGRATIONS);
    ({ app, baseUrl } = await startDemoApp('express', db.url, [LeasedNotesModule], false, { purge: { interval: false } }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const ledger = async (account: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]))[0].n);

  it('replays the message processed before the upgrade, byte for byte, without running the handler', async () => {
    const replay = await postJson(`${baseUrl}/credits`, body, { 'Idempotency-Key': 'key-before' });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(replay.bytes.toString('utf8')).toBe(sent);
    expect(await ledger('acc-before')).toBe(1);
  });

  it('processes a new message once, and replays its duplicate', async () => {
    const account = `acc-after-${shape}`;
    const first = await postJson(`${baseUrl}/credits`, { account, cents: 70 }, { 'Idempotency-Key': 'key-after' });
    const again = await postJson(`${baseUrl}/credits`, { account, cents: 70 }, { 'Idempotency-Key': 'key-after' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.bytes).toEqual(first.bytes);
    expect(await ledger(account)).toBe(1);
    expect(await db.query('SELECT count(*)::int AS n FROM processed_messages WHERE message_id = $1', ['key-after'])).toEqual([{ n: 1 }]);
  });

  it('runs a lease-mode handler on the table, once per message', async () => {
    const first = await postJson(`${baseUrl}/leased-notes/n-1`, {}, { 'Idempotency-Key': 'lease-1' });
    const again = await postJson(`${baseUrl}/leased-notes/n-1`, {}, { 'Idempotency-Key': 'lease-1' });
    expect(first).toMatchObject({ status: 201, json: { id: 'n-1', run: 1 } });
    expect(again).toMatchObject({ status: 201, json: { id: 'n-1', run: 1 } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(app.get(LeasedNotesController).runs.get('n-1')).toBe(1);
    expect(
      await db.query(`SELECT lease_token, lease_expires_at, response_status FROM processed_messages WHERE message_id = 'lease-1'`),
    ).toEqual([{ lease_token: null, lease_expires_at: null, response_status: 201 }]);
  });

  it('leaves the store in the shape the current migrations create on a new database', async () => {
    const fresh = await createTestDatabase();
    try {
      await runMigrations(fresh.url, CURRENT_MIGRATIONS);
      expect(await catalogue(db)).toEqual(await catalogue(fresh));
    } finally {
      await fresh.drop();
    }
  });
});

describe('the upgrade migration on a store already in the current shape', () => {
  it('changes nothing, however many times it runs', async () => {
    const db = await createTestDatabase();
    const dataSource = new DataSource({ type: 'postgres', url: db.url, migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000] });
    try {
      await dataSource.initialize();
      await dataSource.runMigrations();
      await db.query(`SELECT processed_messages_claim('Upgrade.spec', 'k-1', 'default', NULL, 60000)`);
      await db.query(`SELECT processed_messages_record('Upgrade.spec', 'k-1', 201, '{"etag":"x"}', '\\x7b7d'::bytea)`);
      const rows = () => db.query('SELECT *, xmin::text AS version FROM processed_messages');
      const [before, rowsBefore] = [await catalogue(db), await rows()];
      const queryRunner = dataSource.createQueryRunner();
      try {
        await new UpgradeProcessedMessagesTable1796342400000().up(queryRunner);
        await new UpgradeProcessedMessagesTable1796342400000().up(queryRunner);
      } finally {
        await queryRunner.release();
      }
      expect(await catalogue(db)).toEqual(before);
      // Not rewritten: the same row version.
      expect(await rows()).toEqual(rowsBefore);
    } finally {
      await dataSource.destroy();
      await db.drop();
    }
  });
});
