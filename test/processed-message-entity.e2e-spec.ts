import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyContext,
  IdempotencyModule,
  IdempotentHandler,
  ProcessedMessage,
} from 'nestjs-idempotent-consumer';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const MIGRATIONS = [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000];

@Controller('orders')
class OrdersController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post()
  @IdempotentHandler({ sender: 'shop', retention: '2d' })
  async place(@Body() order: { item: string }) {
    const [{ id }] = await this.idempotency.manager.query<{ id: number }[]>('INSERT INTO orders (item) VALUES ($1) RETURNING id', [order.item]);
    return { id, item: order.item };
  }
}

/** The exported entity, registered with TypeORM as a service that reads the store would. */
describe('the ProcessedMessage entity in a data source of the application', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('a data source with the entity initializes, and finds nothing to change in the schema the migrations made', async () => {
    const dataSource = new DataSource({ type: 'postgres', url: db.url, entities: [ProcessedMessage], migrations: MIGRATIONS });
    await dataSource.initialize();
    try {
      expect((await dataSource.runMigrations()).map((migration) => migration.name)).toEqual(MIGRATIONS.map((migration) => migration.name));
      const pending = await dataSource.driver.createSchemaBuilder().log();
      expect(pending.upQueries.map((query) => query.query)).toEqual([]);
    } finally {
      await dataSource.destroy();
    }
  });

  describe('in a Nest application with IdempotencyModule, whose data source runs the migrations', () => {
    let app: INestApplication;
    let appDb: TestDatabase;

    beforeAll(async () => {
      appDb = await createTestDatabase();
      await appDb.query('CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)');
      const moduleRef = await Test.createTestingModule({
        imports: [
          TypeOrmModule.forRoot({ type: 'postgres', url: appDb.url, entities: [ProcessedMessage], migrations: MIGRATIONS, migrationsRun: true, retryAttempts: 0 }),
          IdempotencyModule.forRoot({ purge: { interval: false } }),
        ],
        controllers: [OrdersController],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
      await appDb?.drop();
    });

    it('the row of a processed request reads back through the repository: sender, expiry and the recorded response', async () => {
      const answer = await request(app.getHttpServer()).post('/orders').set('Idempotency-Key', 'order-1').send({ item: 'book' });
      expect(answer.status).toBe(201);
      const repository = app.get(DataSource).getRepository(ProcessedMessage);

      // The consumer is the module's default name for the handler: read it from the store.
      const rows = await repository.findBy({ messageId: 'order-1' });
      expect(rows).toHaveLength(1);
      const [{ consumer }] = rows;
      const claim = await repository.findOneBy({ consumer, messageId: 'order-1' });

      expect(claim).toMatchObject({ consumer, messageId: 'order-1', sender: 'shop', responseStatus: 201, leaseToken: null, leaseExpiresAt: null });
      expect(claim?.fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(claim?.processedAt).toBeInstanceOf(Date);
      expect(claim!.expiresAt.getTime() - claim!.processedAt.getTime()).toBe(2 * 24 * 60 * 60 * 1000);
      // Recorded under the names as they were sent.
      expect(claim?.responseHeaders).toMatchObject({ 'Content-Type': expect.stringContaining('application/json') });
      expect(Buffer.isBuffer(claim?.responseBody)).toBe(true);
      expect(JSON.parse(claim!.responseBody!.toString('utf8'))).toEqual(answer.body);
      expect(await appDb.query('SELECT count(*)::int AS n FROM orders')).toEqual([{ n: 1 }]);
    });
  });
});
