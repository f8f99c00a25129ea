import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { RowDataPacket } from 'mysql2/promise';
import { mariaDbTypeOrmAppModule } from './apps/mariadb-typeorm/mariadb-typeorm-app.module.js';
import { createMariaDbDatabase, type MariaDbDatabase } from './support/mariadb-database.js';
import { gateWaits, holdGates } from './support/mariadb-gates.js';
import { until } from './support/test-database.js';

/**
 * The store on MariaDB through the module's default data layer, TypeORM, on a data source of type
 * `mariadb`: the package's TypeORM migration makes the table, the handler's repositories, entity
 * managers, query runners and transactions join the claim (theirs become savepoints), a throw, a
 * lock wait timeout or a deadlock keeps nothing, and lease mode works on the same table. The effects
 * are counted in MariaDB.
 */
describe('the store on MariaDB through TypeORM (a mariadb data source)', () => {
  let mariadb: MariaDbDatabase;
  let app: INestApplication;
  let base: string;

  const count = async (sql: string, params: unknown[] = []) => Number(((await mariadb.pool.query<RowDataPacket[]>(sql, params))[0][0] as { n: number | string }).n);
  const credits = (account: string) => count('SELECT count(*) AS n FROM credits WHERE account = ?', [account]);
  const cents = (account: string) => count('SELECT COALESCE(sum(cents), 0) AS n FROM credits WHERE account = ?', [account]);
  const claims = (key: string) => count('SELECT count(*) AS n FROM processed_messages WHERE message_id = ?', [key]);
  const credit = async (account: string, key: string, body: Record<string, unknown> = {}) => {
    const response = await fetch(`${base}/credits/${account}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ cents: 7, ...body }),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  async function startApp(url: string, migrationsRun: boolean): Promise<INestApplication> {
    const started = await NestFactory.create(mariaDbTypeOrmAppModule(url, { migrationsRun }), { logger: false });
    try {
      await started.listen(0, '127.0.0.1');
    } catch (error) {
      // The data source opened its pool before the start-up checks refused: closed, so that nothing is left open.
      await started.close();
      throw error;
    }
    return started;
  }

  beforeAll(async () => {
    mariadb = await createMariaDbDatabase('idempotency_typeorm', [
      'CREATE TABLE credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(64) NOT NULL, cents INT NOT NULL)',
      'CREATE TABLE gates (name VARCHAR(64) PRIMARY KEY)',
    ]);
    app = await startApp(mariadb.url, true);
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
    await mariadb?.drop();
  });

  const hold = (...gates: string[]) => holdGates(mariadb, ...gates);
  const lockWaits = () => gateWaits(mariadb);

  it("the package's TypeORM migration made the table: MariaDB's columns, keys compared byte for byte", async () => {
    const [columns] = await mariadb.pool.query<RowDataPacket[]>(
      `SELECT COLUMN_NAME AS name, COLLATION_NAME AS collation FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'processed_messages' AND COLUMN_NAME IN ('consumer', 'message_id') ORDER BY COLUMN_NAME`,
      [mariadb.name],
    );
    expect(columns.map((column) => ({ ...column }))).toEqual([
      { name: 'consumer', collation: 'utf8mb4_nopad_bin' },
      { name: 'message_id', collation: 'utf8mb4_nopad_bin' },
    ]);
    expect(await count(`SELECT count(*) AS n FROM migrations WHERE name = 'CreateProcessedMessagesTableMariaDb1796601600000'`)).toBe(1);
  });

  it('50 concurrent duplicates written through a repository: one credit and one claim, every other answered as a replay or 409', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => credit('fifty', 'fifty')));
    expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status !== 201 && answer.status !== 409)).toEqual([]);
    expect(await credits('fifty')).toBe(1);
    expect(await claims('fifty')).toBe(1);
  });

  it('replays the recorded response byte for byte, without running the handler again', async () => {
    const first = await credit('replay', 'replay');
    const again = await credit('replay', 'replay');
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.parse(first.text)).toMatchObject({ note: 'é ✓' });
    expect(await credits('replay')).toBe(1);
  });

  it('a handler that throws after writes through a repository, a nested transaction, a query runner and IdempotencyContext.manager: nothing committed, claim included, and the key stays usable', async () => {
    expect((await credit('throws', 'throws', { nested: 'commit', queryRunner: true, contextManager: true, fail: true })).status).toBe(500);
    expect(await credits('throws')).toBe(0);
    expect(await claims('throws')).toBe(0);
    expect((await credit('throws', 'throws', { contextManager: true })).status).toBe(201);
    expect(await credits('throws')).toBe(2);
  });

  it("dataSource.transaction() inside the handler is a savepoint: committed, it commits with the claim; rolled back, only its write is undone", async () => {
    expect((await credit('nested-commit', 'nested-commit', { nested: 'commit' })).status).toBe(201);
    expect(await cents('nested-commit')).toBe(707);
    expect((await credit('nested-rollback', 'nested-rollback', { nested: 'rollback' })).status).toBe(201);
    expect(await cents('nested-rollback')).toBe(7);
    expect(await claims('nested-rollback')).toBe(1);
  });

  it("two dataSource.transaction() calls at once take turns on the claim's connection, and both commit with it", async () => {
    expect((await credit('parallel', 'parallel', { parallel: true })).status).toBe(201);
    expect(await cents('parallel')).toBe(207);
  });

  it("a query runner's own transaction (connect, startTransaction, commitTransaction, release) is a savepoint of the claim's", async () => {
    expect((await credit('runner', 'runner', { queryRunner: true })).status).toBe(201);
    expect(await cents('runner')).toBe(57);
  });

  it("a transaction at the claim's level joins it; at a stronger level (SERIALIZABLE) it is refused before it writes: 500, nothing committed", async () => {
    expect((await credit('level-same', 'level-same', { isolation: 'READ COMMITTED' })).status).toBe(201);
    expect(await cents('level-same')).toBe(37);
    const refused = await credit('level-stronger', 'level-stronger', { isolation: 'SERIALIZABLE' });
    expect(refused.status).toBe(500);
    expect((JSON.parse(refused.text) as { type?: unknown }).type).toBe('urn:idempotency:claim-transaction');
    expect(await credits('level-stronger')).toBe(0);
    expect(await claims('level-stronger')).toBe(0);
  });

  it('a lock wait timeout (1205) inside the handler: answered 503 with Retry-After, nothing kept; the retry credits once', async () => {
    const release = await hold('timeout');
    try {
      const answer = await credit('timeout', 'timeout', { gates: ['timeout'], lockWaitSeconds: 1 });
      expect([answer.status, answer.headers.get('retry-after') !== null]).toEqual([503, true]);
    } finally {
      await release();
    }
    expect(await credits('timeout')).toBe(0);
    expect(await claims('timeout')).toBe(0);
    expect((await credit('timeout', 'timeout', { gates: ['timeout'] })).status).toBe(201);
    expect(await credits('timeout')).toBe(1);
  });

  it('two handlers deadlocked (1213): the victim is answered 503 (a retry) with nothing of it kept; each retried key credits once', async () => {
    const [a, b] = ['deadlock-a', 'deadlock-b'];
    await mariadb.pool.query('INSERT INTO gates (name) VALUES (?), (?)', ['g1', 'g2']);
    const release = await hold('barrier-a', 'barrier-b');
    let answers: Awaited<ReturnType<typeof credit>>[];
    try {
      // Each takes its first gate, waits at its barrier, then asks for the other's gate.
      const first = credit(a, a, { gates: ['g1', 'barrier-a', 'g2'] });
      const second = credit(b, b, { gates: ['g2', 'barrier-b', 'g1'] });
      await until(async () => (await lockWaits()) === 2, 'both handlers hold their first gate and wait at their barrier');
      await release();
      answers = await Promise.all([first, second]);
    } finally {
      await release();
    }
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 503]);
    const victim = answers[0].status === 503 ? a : b;
    expect(await credits(victim)).toBe(0);
    expect(await claims(victim)).toBe(0);
    expect((await credit(victim, victim)).status).toBe(201);
    expect(await credits(a)).toBe(1);
    expect(await credits(b)).toBe(1);
  });

  it('lease mode on the store: 10 concurrent duplicates, one credit, the others answered as replays or 409', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => credit('leased/leased', 'leased')));
    expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status !== 201 && answer.status !== 409)).toEqual([]);
    expect(await credits('leased')).toBe(1);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'leased' AND lease_token IS NULL`)).toBe(1);
  });

  it("refuses to start without the table, naming the package's TypeORM migration for MariaDB", async () => {
    const empty = await createMariaDbDatabase('idempotency_typeorm_empty');
    try {
      await expect(startApp(empty.url, false)).rejects.toThrow(/table processed_messages does not exist.*CreateProcessedMessagesTableMariaDb1796601600000/);
    } finally {
      await empty.drop();
    }
  });
});
