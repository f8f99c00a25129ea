import type { INestApplication, LoggerService, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyHealthIndicator,
  type IdempotencyModuleOptions,
  IdempotencySchemaError,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { Registry } from 'prom-client';
import { DataSource, type MigrationInterface } from 'typeorm';
import { LeasedNotesController, LeasedNotesModule, NotesController, NotesModule, UnmigratedAppModule } from './fixtures/store-schema.module.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { postJson } from './support/post-json.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const ALL = [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000];

/** A database of its own with `migrations` run. */
async function databaseWith(migrations: (new () => MigrationInterface)[]): Promise<TestDatabase> {
  const db = await createTestDatabase();
  const dataSource = await new DataSource({ type: 'postgres', url: db.url, migrations, migrationsRun: true }).initialize();
  await dataSource.destroy();
  return db;
}

/** A service with `handlers` on `db`, which runs no migrations; starts listening, or rejects. */
async function start(
  db: TestDatabase,
  handlers: Type[],
  logger: LoggerService | false = false,
  idempotency: IdempotencyModuleOptions = {},
): Promise<{ app: INestApplication; baseUrl: string }> {
  const moduleRef = await Test.createTestingModule({ imports: [UnmigratedAppModule.register(db.url, handlers, idempotency)] }).compile();
  const app = moduleRef.createNestApplication({ logger });
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close();
    throw error;
  }
  return { app, baseUrl: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

describe('the store schema, checked when the service starts', () => {
  const databases: TestDatabase[] = [];
  const track = (db: TestDatabase) => (databases.push(db), db);

  afterAll(async () => {
    await Promise.all(databases.map((db) => db.drop()));
  });

  it('refuses to start a transactional handler without the claim functions, naming them and the migrations to add', async () => {
    const db = track(await databaseWith([CreateProcessedMessagesTable1764633600000]));
    const starting = start(db, [NotesModule]);
    await expect(starting).rejects.toThrow(IdempotencySchemaError);
    await expect(starting).rejects.toThrow(
      'the function processed_messages_claim(text, text, text, text, bigint) does not exist; ' +
        'the function processed_messages_record(text, text, integer, json, bytea) does not exist. ' +
        'Add CreateProcessedMessagesFunctions1796256000000 and UpgradeProcessedMessagesTable1796342400000 to the data source\'s migrations',
    );
    expect(await db.query('SELECT count(*)::int AS n FROM processed_messages')).toEqual([{ n: 0 }]);
  });

  it('refuses to start without the table, naming all three migrations', async () => {
    const db = track(await createTestDatabase());
    await expect(start(db, [NotesModule])).rejects.toThrow(
      /the table processed_messages does not exist; .*Add CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000 and UpgradeProcessedMessagesTable1796342400000 to/,
    );
    await expect(start(db, [LeasedNotesModule])).rejects.toThrow('the table processed_messages does not exist.');
  });

  it('on a fresh database, with the store gauges sampled, says only what the schema lacks: the sampler takes no sample of a missing table', async () => {
    const db = track(await createTestDatabase());
    const logger = new CapturingLogger();
    await expect(start(db, [NotesModule], logger, { metrics: { registry: new Registry() } })).rejects.toThrow(IdempotencySchemaError);
    // Closed: every query the start issued has come back, and each failed sample would have been logged.
    expect(logger.lines.filter((line) => line.startsWith('WARN') || line.startsWith('ERROR'))).toEqual([]);
  });

  it('refuses to start on a table of an earlier shape, naming each lack and the upgrade migration', async () => {
    const db = track(await databaseWith(ALL));
    await db.query('ALTER TABLE processed_messages DROP COLUMN lease_token, DROP COLUMN lease_expires_at');
    await expect(start(db, [LeasedNotesModule])).rejects.toThrow(
      'the column lease_token does not exist; the column lease_expires_at does not exist. Add UpgradeProcessedMessagesTable1796342400000 to',
    );
  });

  it('starts a lease handler on the built-in store without the claim functions, which it never calls', async () => {
    const db = track(await databaseWith([CreateProcessedMessagesTable1764633600000]));
    const { app, baseUrl } = await start(db, [LeasedNotesModule]);
    try {
      const first = await postJson(`${baseUrl}/leased-notes/a`, {}, { 'Idempotency-Key': 'a' });
      const again = await postJson(`${baseUrl}/leased-notes/a`, {}, { 'Idempotency-Key': 'a' });
      expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
      expect(app.get(LeasedNotesController).runs.get('a')).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('starts on a store with more than it needs, as a newer version leaves it during a rolling deploy', async () => {
    const db = track(await databaseWith(ALL));
    await db.query('ALTER TABLE processed_messages ADD COLUMN attempts integer');
    await db.query(
      `CREATE FUNCTION processed_messages_claim(p_consumer text, p_message_id text, p_sender text, p_fingerprint text, p_retention_ms bigint, p_attempt integer)
       RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
    );
    await db.query(`CREATE FUNCTION processed_messages_release(p_consumer text, p_message_id text) RETURNS void LANGUAGE sql AS ''`);
    const { app, baseUrl } = await start(db, [NotesModule]);
    try {
      const first = await postJson(`${baseUrl}/notes/b`, {}, { 'Idempotency-Key': 'b' });
      const again = await postJson(`${baseUrl}/notes/b`, {}, { 'Idempotency-Key': 'b' });
      expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
      expect(app.get(NotesController).runs.get('b')).toBe(1);
      expect(await db.query(`SELECT count(*)::int AS n FROM processed_messages WHERE message_id = 'b'`)).toEqual([{ n: 1 }]);
    } finally {
      await app.close();
    }
  });

  it('answers problem+json when a claim function is dropped at runtime, saying how to recreate it; recreated as it says, the next delivery works', async () => {
    const db = track(await databaseWith(ALL));
    const logger = new CapturingLogger();
    const { app, baseUrl } = await start(db, [NotesModule], logger);
    const rows = async (id: string) => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM processed_messages WHERE message_id = $1', [id]))[0].n;
    try {
      // The library's migrations are recorded as run: TypeORM will not run them again.
      expect((await db.query<{ name: string }>('SELECT name FROM migrations ORDER BY id')).map(({ name }) => name)).toEqual(ALL.map(({ name }) => name));
      for (const [dropped, id] of [
        ['processed_messages_claim(text, text, text, text, bigint)', 'c'],
        ['processed_messages_record(text, text, integer, json, bytea)', 'd'],
      ]) {
        await db.query(`DROP FUNCTION ${dropped}`);
        const answer = await postJson(`${baseUrl}/notes/${id}`, {}, { 'Idempotency-Key': id });
        expect(answer.status).toBe(500);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.json).toEqual({
          type: 'urn:idempotency:store-schema',
          title: 'Idempotency store incomplete',
          status: 500,
          code: 'IDEMPOTENCY_STORE_SCHEMA',
          detail: expect.stringContaining(`the function ${dropped} does not exist. It was there when the application started, so it was dropped since`),
        });
        expect(answer.json?.detail).toContain("running UpgradeProcessedMessagesTable1796342400000's up() once more");
        expect(await rows(id)).toBe(0);

        // Recreated as the message says: the next delivery is claimed, runs once, and its duplicate is replayed.
        const dataSource = await new DataSource({ type: 'postgres', url: db.url }).initialize();
        const queryRunner = dataSource.createQueryRunner();
        try {
          await new UpgradeProcessedMessagesTable1796342400000().up(queryRunner);
        } finally {
          await queryRunner.release();
          await dataSource.destroy();
        }
        const retried = await postJson(`${baseUrl}/notes/${id}`, {}, { 'Idempotency-Key': id });
        const again = await postJson(`${baseUrl}/notes/${id}`, {}, { 'Idempotency-Key': id });
        expect([retried.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
        expect(await rows(id)).toBe(1);
      }
      expect(app.get(NotesController).runs.get('c')).toBe(1);
      // Each failure logged for the operator once, with the same advice; no line sends them to add migrations already run.
      const errors = logger.lines.filter((line) => line.startsWith('ERROR'));
      expect(errors).toEqual([
        expect.stringContaining('the function processed_messages_claim(text, text, text, text, bigint) does not exist. It was there'),
        expect.stringContaining('the function processed_messages_record(text, text, integer, json, bytea) does not exist. It was there'),
      ]);
      expect(errors.every((line) => line.includes('await new UpgradeProcessedMessagesTable1796342400000().up(queryRunner)'))).toBe(true);
      expect(logger.lines.filter((line) => line.includes("to the data source's migrations"))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('reports the health indicator down while a function is missing at runtime, with the message, and up once it is back', async () => {
    const db = track(await databaseWith(ALL));
    const { app } = await start(db, [NotesModule]);
    try {
      const indicator = app.get(IdempotencyHealthIndicator);
      expect((await indicator.isHealthy()).idempotency.status).toBe('up');
      await db.query('DROP FUNCTION processed_messages_record(text, text, integer, json, bytea)');
      expect((await indicator.isHealthy()).idempotency).toEqual({
        status: 'down',
        message: expect.stringContaining('the function processed_messages_record(text, text, integer, json, bytea) does not exist. Add CreateProcessedMessagesFunctions1796256000000'),
        missing: ['the function processed_messages_record(text, text, integer, json, bytea) does not exist'],
      });
      // Added to the migrations and run already: the message says how to recreate the function all the same.
      expect((await indicator.isHealthy()).idempotency.message).toContain(
        "If they are recorded as run already (a function was dropped after), TypeORM will not run them again: recreate the claim's functions by running UpgradeProcessedMessagesTable1796342400000's up() once more",
      );
      const queryRunner = (await new DataSource({ type: 'postgres', url: db.url }).initialize()).createQueryRunner();
      try {
        await new UpgradeProcessedMessagesTable1796342400000().up(queryRunner);
      } finally {
        await queryRunner.release();
        await queryRunner.connection.destroy();
      }
      expect((await indicator.isHealthy()).idempotency.status).toBe('up');
    } finally {
      await app.close();
    }
  });
});
