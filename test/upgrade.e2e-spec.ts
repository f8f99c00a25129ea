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
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { RenamedStripeWebhookModule, StripeWebhookModule } from './fixtures/renamed-handlers.module.js';
import { LeasedNotesController, LeasedNotesModule } from './fixtures/store-schema.module.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { post, startDemoApp } from './support/demo-app.js';
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

describe('ids a 0.2.0 store holds under a handler\'s former default name, after the upgrade and a later rename', () => {
  /** The handler's name before 0.3.0 (`Class.method` of the fixture as first written), and its route, its name now. */
  const FORMER = 'StripeWebhookController.receive';
  const CURRENT = 'POST /webhooks/stripe';
  let db: TestDatabase;
  const apps: INestApplication[] = [];

  async function start(modules: (typeof StripeWebhookModule)[]): Promise<{ baseUrl: string; logger: CapturingLogger }> {
    const logger = new CapturingLogger();
    const { app, baseUrl } = await startDemoApp('express', db.url, modules, logger, { purge: { interval: false } });
    apps.push(app);
    return { baseUrl, logger };
  }

  /** A webhook event as 0.2.0 stored it: under the former name, its fingerprint over method, URL and body, with its effect. */
  async function storeAs020(id: string): Promise<void> {
    const body = { id };
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, fingerprint, response_status, response_headers, response_body, expires_at)
       VALUES ($1, $2, 'stripe', $3, 200, '{"content-type":"application/json; charset=utf-8"}', $4, now() + interval '7 days')`,
      [FORMER, id, sha256(`{"body":${JSON.stringify(body)},"method":"POST","url":"/webhooks/stripe"}`), Buffer.from(JSON.stringify({ received: id }))],
    );
    await db.query(`INSERT INTO effects (handler, key) VALUES ('stripe', $1)`, [id]);
  }

  const effects = async (id: string) =>
    Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM effects WHERE handler = 'stripe' AND key = $1`, [id]))[0].n);
  const consumersOf = async (ids: string[]) =>
    db.query<{ consumer: string; n: number }>(
      'SELECT consumer, count(*)::int AS n FROM processed_messages WHERE message_id = ANY($1) GROUP BY consumer ORDER BY consumer',
      [ids],
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    await runMigrations(db.url, [released('CreateProcessedMessagesTable1764633600000', [TABLE_0_2_0, EXPIRES_INDEX]), CreateCreditTables1764633600001]);
    await db.query(FIXTURE_TABLES_SQL);
    for (const id of ['evt_old_1', 'evt_old_2', 'evt_old_3']) {
      await storeAs020(id);
    }
    // The upgrade as the CHANGELOG says: add the migrations, run them, deploy.
    await runMigrations(db.url, CURRENT_MIGRATIONS);
  });

  afterAll(async () => {
    for (const app of apps) {
      await app.close();
    }
    await db?.drop();
  });

  it('processes none of them again once the class and the method are renamed, nor the ids stored after the upgrade', async () => {
    // The first start of this version: the handler still has its former class and method names.
    const upgraded = await start([StripeWebhookModule]);
    const replayed = await post(`${upgraded.baseUrl}/webhooks/stripe`, { id: 'evt_old_3' });
    expect(replayed).toMatchObject({ status: 200, body: { received: 'evt_old_3' } });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    const fresh = await post(`${upgraded.baseUrl}/webhooks/stripe`, { id: 'evt_new_1' });
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    await apps.pop()!.close();

    // A later release renames the class and the method.
    const renamed = await start([RenamedStripeWebhookModule]);
    for (const id of ['evt_old_1', 'evt_old_2', 'evt_new_1']) {
      const redelivery = await post(`${renamed.baseUrl}/webhooks/stripe`, { id });
      expect(redelivery).toMatchObject({ status: 200, body: { received: id } });
      expect(redelivery.headers.get('idempotent-replayed')).toBe('true');
    }
    for (const id of ['evt_old_1', 'evt_old_2', 'evt_old_3', 'evt_new_1']) {
      expect(await effects(id)).toBe(1);
    }
    // They were moved to the handler's current name at the first start of this version.
    expect(upgraded.logger.lines).toContainEqual(expect.stringContaining(`3 moved from '${FORMER}' to '${CURRENT}'`));
    expect(await consumersOf(['evt_old_1', 'evt_old_2', 'evt_old_3', 'evt_new_1'])).toEqual([{ consumer: CURRENT, n: 4 }]);
    // Nothing is left under a name no handler claims, so no advice to pin a former name is given.
    expect(renamed.logger.lines.filter((line) => line.includes('no handler of this application claims'))).toEqual([]);
    await apps.pop()!.close();
  });

  it('moves ids an instance of the earlier version stored meanwhile, in batches, while another instance answers their redeliveries', async () => {
    // An instance of this version starts while an instance of the earlier one, still running (a rolling deploy), has stored
    // under the former name; that one goes on doing so: more ids than one batch of the move takes.
    await storeAs020('evt_rolling_0');
    const running = await start([StripeWebhookModule]);
    expect(running.logger.lines).toContainEqual(expect.stringContaining(`1 moved from '${FORMER}' to '${CURRENT}'`));
    const count = 12_000;
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, response_status, response_headers, response_body, expires_at)
       SELECT $1, 'evt_rolling_' || i, 'stripe', 200, '{"content-type":"application/json; charset=utf-8"}',
              convert_to('{"received":"evt_rolling_' || i || '"}', 'UTF8'), now() + interval '7 days'
       FROM generate_series(1, $2) AS i`,
      [FORMER, count],
    );
    await db.query(`INSERT INTO effects (handler, key) SELECT 'stripe', 'evt_rolling_' || i FROM generate_series(1, $1) AS i`, [count]);

    // A second instance of this version starts, and moves them, while the first answers redeliveries, 20 at a time, until it has started.
    let starting = true;
    const redelivering = (async () => {
      const answers: string[] = [];
      for (let round = 0; starting || round === 0; round++) {
        const ids = Array.from({ length: 20 }, (_, index) => `evt_rolling_${((round * 20 + index) % count) + 1}`);
        const replies = await Promise.all(ids.map((id) => post(`${running.baseUrl}/webhooks/stripe`, { id })));
        answers.push(...replies.map((reply, index) => `${reply.status} ${reply.headers.get('idempotent-replayed')} ${(reply.body as { received: string }).received === ids[index]}`));
      }
      return answers;
    })();
    const second = await start([StripeWebhookModule]);
    starting = false;
    const answers = await redelivering;
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((answer) => answer !== '200 true true')).toEqual([]);
    expect(second.logger.lines).toContainEqual(expect.stringContaining(`${count} moved from '${FORMER}' to '${CURRENT}'`));
    expect(await db.query(`SELECT consumer, count(*)::int AS n FROM processed_messages WHERE message_id LIKE 'evt_rolling_%' GROUP BY consumer`)).toEqual([
      { consumer: CURRENT, n: count + 1 },
    ]);
    const [{ n }] = await db.query<{ n: string }>(`SELECT count(*) AS n FROM effects WHERE key LIKE 'evt_rolling_%'`);
    expect(Number(n)).toBe(count + 1);
    // Both instances answer them under the current name.
    for (const baseUrl of [running.baseUrl, second.baseUrl]) {
      const redelivery = await post(`${baseUrl}/webhooks/stripe`, { id: `evt_rolling_${count}` });
      expect(redelivery.headers.get('idempotent-replayed')).toBe('true');
    }
  });
});
