import { readFileSync } from 'node:fs';
import { Column, DataSource, Entity, PrimaryColumn, type Logger as TypeOrmLogger, type QueryRunner } from 'typeorm';
import { createTestDatabase, type TestDatabase, until } from '../../../../../test/support/test-database.js';
import * as typeormInternals from './typeorm-internals.js';

/**
 * The parts of TypeORM and node-postgres that the module relies on without their being documented
 * API (TypeORM's in typeorm-internals.ts beside this file), checked on a real PostgreSQL with the
 * installed versions: CI runs this suite on TypeORM 1.1 (the lock file) and on 0.3.31
 * (.ci/variables). When an upgrade changes one of them, this suite fails before a claim goes
 * wrong: then check the module against the new version and widen the peer range in
 * libs/idempotency/package.json.
 */
const manifest = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as { version: string; peerDependencies: Record<string, string> };
const typeormVersion = manifest('node_modules/typeorm/package.json').version;
const pgVersion = manifest('node_modules/pg/package.json').version;

@Entity('internals_items')
class Item {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'integer' })
  n: number;
}

class QueryLog implements TypeOrmLogger {
  readonly queries: string[] = [];
  logQuery = (query: string) => void this.queries.push(query);
  logQueryError() {}
  logQuerySlow() {}
  logSchemaBuild() {}
  logMigration() {}
  log() {}
}

describe(`the dependencies' internals the module relies on (TypeORM ${typeormVersion}, pg ${pgVersion})`, () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  const log = new QueryLog();

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query('CREATE TABLE internals_items (id text PRIMARY KEY, n integer NOT NULL)');
    dataSource = new DataSource({ type: 'postgres', url: db.url, entities: [Item], logging: true, logger: log });
    await dataSource.initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it(`installs TypeORM ${typeormVersion} and pg ${pgVersion}, of the lines the peer ranges name`, () => {
    const library = manifest('libs/idempotency/package.json');
    expect(library.peerDependencies.typeorm).toBe('~0.3.31 || ~1.1.1');
    expect(typeormVersion).toMatch(/^(0\.3\.(3[1-9]|[4-9]\d)|1\.1\.([1-9]|\d\d+))$/);
    expect(library.peerDependencies.pg).toBe('^8.21.0');
    const [major, minor] = pgVersion.split('.').map(Number);
    expect(major === 8 && minor >= 21).toBe(true);
  });

  it('routes every query of managers, repositories, query builders and transactions through dataSource.createQueryRunner()', async () => {
    const modes: string[] = [];
    const create = dataSource.createQueryRunner.bind(dataSource);
    dataSource.createQueryRunner = (mode = 'master') => {
      modes.push(mode);
      return create(mode);
    };
    try {
      await dataSource.manager.insert(Item, { id: 'a', n: 1 });
      await dataSource.getRepository(Item).findOneBy({ id: 'a' });
      await dataSource.getRepository(Item).update({ id: 'a' }, { n: 2 });
      await dataSource.query('SELECT 1');
      await dataSource.createQueryBuilder(Item, 'item').getMany();
      await dataSource.transaction((manager) => manager.insert(Item, { id: 'b', n: 1 }));
    } finally {
      delete (dataSource as Partial<DataSource>).createQueryRunner;
    }
    // Reads ask for a replica ('slave') even where there is none, which is why reads join the claim too.
    expect(modes).toEqual(['master', 'slave', 'master', 'master', 'slave', 'master']);
    expect((dataSource.driver as unknown as { isReplicated: boolean }).isReplicated).toBe(false);
  });

  it('makes a runner marked as in a transaction nest startTransaction() in savepoints, and hands out a pg client', async () => {
    const runner: QueryRunner = typeormInternals.createPrimaryQueryRunner(dataSource);
    expect(runner.manager.queryRunner).toBe(runner);
    const client = await typeormInternals.connectClient(runner);
    try {
      expect(client.escapeLiteral("it's")).toBe(`'it''s'`);
      await client.query('BEGIN');
      expect(client.getTransactionStatus()).toBe('T');
      expect(typeormInternals.transactionDepth(runner)).toBe(0);
      typeormInternals.markTransaction(runner, true);
      expect(runner.isTransactionActive).toBe(true);
      log.queries.length = 0;
      await runner.manager.transaction(async (manager) => {
        expect(typeormInternals.transactionDepth(runner)).toBe(2);
        await manager.insert(Item, { id: 'c', n: 1 });
      });
      expect(log.queries).toEqual(['SAVEPOINT typeorm_1', expect.stringMatching(/^INSERT INTO "internals_items"/), 'RELEASE SAVEPOINT typeorm_1']);
      expect(typeormInternals.transactionDepth(runner)).toBe(1);
      expect(runner.isTransactionActive).toBe(true);
      // A failed statement rejects on PostgreSQL's ErrorResponse, before its ReadyForQuery updates the
      // status, so the status may still read 'T' right after. The claim's commit therefore also reads
      // COMMIT's command tag, which answers ROLLBACK for an aborted transaction.
      await client.query('SELECT * FROM no_such_table').catch(() => undefined);
      // pg sends a queued query only after the previous ReadyForQuery, so once this one settles the status is current.
      await client.query('SELECT 1').catch(() => undefined);
      expect(client.getTransactionStatus()).toBe('E');
      const commit = (await client.query('COMMIT')) as { command: string };
      expect(commit.command).toBe('ROLLBACK');
      expect(client.getTransactionStatus()).toBe('I');
    } finally {
      typeormInternals.markTransaction(runner, false);
      await runner.release();
    }
    expect(runner.isTransactionActive).toBe(false);
    expect(typeormInternals.transactionDepth(runner)).toBe(0);
    expect(runner.isReleased).toBe(true);
  });

  it("lists a connected runner in the driver's connectedQueryRunners, which the driver releases on shutdown, and unlists it on release", async () => {
    const listed = (dataSource.driver as unknown as { connectedQueryRunners: QueryRunner[] }).connectedQueryRunners;
    const runner = dataSource.driver.createQueryRunner('master');
    await runner.connect();
    expect(listed).toContain(runner);
    await runner.release();
    expect(listed).not.toContain(runner);

    const unlisted = dataSource.driver.createQueryRunner('master');
    await unlisted.connect();
    typeormInternals.unlistConnectedRunner(dataSource, unlisted);
    expect(listed).not.toContain(unlisted);
    expect(unlisted.isReleased).toBe(false);
    await unlisted.release();
    expect(unlisted.isReleased).toBe(true);
  });

  it("keeps the primary's pg Pool in driver.master, whose size and queue the module reports when no connection comes", async () => {
    const small = new DataSource({ type: 'postgres', url: db.url, poolSize: 1 });
    await small.initialize();
    const held = small.driver.createQueryRunner('master');
    const waiting = small.driver.createQueryRunner('master');
    try {
      expect(typeormInternals.poolFigures(small)).toEqual({ size: 1, waiting: 0 });
      await held.connect();
      const connecting = waiting.connect();
      await until(async () => typeormInternals.poolFigures(small).waiting === 1, 'a second connect() waits in the pool');
      expect(typeormInternals.poolFigures(small)).toEqual({ size: 1, waiting: 1 });
      await held.release();
      await connecting;
      expect(typeormInternals.poolFigures(small)).toEqual({ size: 1, waiting: 0 });
    } finally {
      await held.release();
      await waiting.release();
      await small.destroy();
    }
  });
});
