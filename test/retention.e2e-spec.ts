import type { Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IdempotencyConsumerConflictError, IdempotencyModule, IdempotencyOptionsError, IdempotencyRetentionError } from 'nestjs-idempotent-consumer';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { ConsumerClashModule, ShortRetentionModule } from './fixtures/misconfigured.module.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

describe('the boot-time check of every idempotent handler', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await db?.drop();
  });

  /** Starts the demo plus `extra` on the real database; answers the start-up error, closing what was opened. */
  async function startupError(extra: Type): Promise<unknown> {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url }), extra] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await app.close();
    }
  }

  const processedCount = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM processed_messages'))[0].n);

  it("refuses to start when a handler's retention is shorter than its sender's horizon, naming the handler and both", async () => {
    const error = await startupError(ShortRetentionModule);
    expect(error).toBeInstanceOf(IdempotencyRetentionError);
    expect(error).toMatchObject({
      handler: 'ShortRetentionController.onEvent',
      retention: '1d',
      sender: 'payments',
      redeliveryHorizon: '3d',
    });
    expect((error as Error).message).toBe(
      "ShortRetentionController.onEvent keeps message ids for 1d, less than the redelivery horizon of its sender 'payments' (3d): " +
        "a redelivery after 1d would be processed again. Set retention: '3d' or longer on the handler.",
    );
    expect(await processedCount()).toBe(0);
  });

  it('refuses to start when two handlers claim the same consumer name, naming both', async () => {
    const error = await startupError(ConsumerClashModule);
    expect(error).toBeInstanceOf(IdempotencyConsumerConflictError);
    expect((error as Error).message).toMatch(
      /^CreditsController\.grant \(in CreditsModule\) and ConsumerClashController\.grant \(in ConsumerClashModule\) claim the same consumer name 'POST \/credits'/,
    );
  });

  it('starts the demo, whose payments handler keeps ids for 7d against a 3d horizon', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url })] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).resolves.toBe(app);
    await app.close();
  });

  describe('without the TypeORM data source the claims need', () => {
    it('an application that imports no TypeOrmModule is refused with an error that says to import it', async () => {
      const moduleRef = await Test.createTestingModule({ imports: [IdempotencyModule.forRoot({}), ShortRetentionModule] }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      const start = app.init();
      await expect(start).rejects.toThrow(IdempotencyOptionsError);
      await expect(start).rejects.toThrow(/import TypeOrmModule\.forRoot\(\.\.\.\)/);
      await expect(start).rejects.toThrow(/the default data source/);
      await app.close();
    });

    it('a dataSource option naming a data source the application does not have is refused, naming it', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [AppModule.register({ databaseUrl: db.url, idempotency: { dataSource: 'reports' } })],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      const start = app.init();
      await expect(start).rejects.toThrow(IdempotencyOptionsError);
      await expect(start).rejects.toThrow(/no TypeORM data source named 'reports'.*TypeOrmModule\.forRoot\(\{ name: 'reports', \.\.\. \}\)/s);
      await app.close();
      expect(await processedCount()).toBe(0);
    });
  });
});
