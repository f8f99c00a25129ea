import { DataSource } from 'typeorm';
import { CreateProcessedMessagesFunctions1796256000000, CreateProcessedMessagesTable1764633600000 } from 'nestjs-idempotent-consumer';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

describe("the library's migrations", () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  const store = async () =>
    (
      await db.query<{ table: boolean; claim: boolean; record: boolean }>(
        `SELECT to_regclass('processed_messages') IS NOT NULL AS table,
                to_regprocedure('processed_messages_claim(text, text, text, text, bigint)') IS NOT NULL AS claim,
                to_regprocedure('processed_messages_record(text, text, integer, json, bytea)') IS NOT NULL AS record`,
      )
    )[0];

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000],
    }).initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('create the table and its two functions, and undo them one migration at a time', async () => {
    await dataSource.runMigrations();
    expect(await store()).toEqual({ table: true, claim: true, record: true });
    await dataSource.undoLastMigration();
    expect(await store()).toEqual({ table: true, claim: false, record: false });
    await dataSource.undoLastMigration();
    expect(await store()).toEqual({ table: false, claim: false, record: false });
    await dataSource.runMigrations();
    expect(await store()).toEqual({ table: true, claim: true, record: true });
  });

  it('create functions that claim a key once, record the response on its row, and bound the wait for an uncommitted twin to 50 ms', async () => {
    const claim = `SELECT processed_messages_claim('MigrationsSpec.handle', 'key-1', 'default', NULL, 60000) AS claimed`;
    expect(await db.query(claim)).toEqual([{ claimed: true }]);
    expect(await db.query(claim)).toEqual([{ claimed: false }]);
    await db.query(`SELECT processed_messages_record('MigrationsSpec.handle', 'key-1', 201, '{"etag":"x"}'::json, '\\x7b7d'::bytea)`);
    expect(
      await db.query(`SELECT response_status, response_headers, convert_from(response_body, 'UTF8') AS body FROM processed_messages WHERE message_id = 'key-1'`),
    ).toEqual([{ response_status: 201, response_headers: { etag: 'x' }, body: '{}' }]);

    expect(await db.query(`SELECT proconfig FROM pg_proc WHERE proname = 'processed_messages_claim'`)).toEqual([{ proconfig: ['lock_timeout=50'] }]);
    const holder = await db.connect();
    const twin = await db.connect();
    try {
      const claimKey2 = `SELECT processed_messages_claim('MigrationsSpec.handle', 'key-2', 'default', NULL, 60000) AS claimed`;
      await holder.query('BEGIN');
      expect((await holder.query(claimKey2)).rows).toEqual([{ claimed: true }]);
      expect((await holder.query('SHOW lock_timeout')).rows).toEqual([{ lock_timeout: '0' }]);
      await expect(twin.query(claimKey2)).rejects.toMatchObject({ code: '55P03' });
      await holder.query('COMMIT');
      expect((await twin.query(claimKey2)).rows).toEqual([{ claimed: false }]);
    } finally {
      await holder.end();
      await twin.end();
    }
  });
});
