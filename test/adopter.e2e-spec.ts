import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { EXPIRES_INDEX, released, TABLE_0_2_0 } from './fixtures/released-migrations.js';
import { post } from './support/demo-app.js';
import { postJson } from './support/post-json.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { installed, packLibrary, run, scratchApp } from './support/scratch-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** The TypeORM line most existing services run, installed in the scratch service. */
const TYPEORM_0_3 = '0.3.31';

/** The payments controller of an existing service, made idempotent as the guide shows. */
const PAYMENTS_CONTROLLER = `
import { Body, Controller, Post } from '@nestjs/common';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';

@Controller('payments')
export class PaymentsController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post()
  @IdempotentHandler()
  async pay(@Body() payment: { order: string; cents: number }) {
    const [{ id }] = await this.idempotency.manager.query<{ id: number }[]>(
      'INSERT INTO payments (order_id, cents) VALUES ($1, $2) RETURNING id',
      [payment.order, payment.cents],
    );
    return { id, order: payment.order, cents: payment.cents };
  }
}
`;

/**
 * The service: the guide's migrations, module and handlers. Its environment picks the variants a
 * test needs: the Stripe controller before and after a rename, an idempotent GET route, a store
 * without the functions, no TypeOrmModule at all.
 */
const MAIN = `
import 'reflect-metadata';
import { Body, Controller, type DynamicModule, Get, HttpCode, Module, Param, Post, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { InjectRepository, TypeOrmModule } from '@nestjs/typeorm';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyContext,
  IdempotencyModule,
  IdempotentHandler,
  ProcessedMessage,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import type { Repository } from 'typeorm';
import { PaymentsController } from './payments.controller.js';

interface StripeEvent { id: string; pending_webhooks?: number }

// Stripe changes pending_webhooks between retries of one event: the guide has its handler compare no fingerprint.

@Controller('webhooks')
class StripeWebhookController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post('stripe')
  @HttpCode(200)
  @IdempotentHandler({ key: { body: 'id' }, sender: 'stripe', fingerprint: false })
  async receive(@Body() event: StripeEvent) {
    await this.idempotency.manager.query('INSERT INTO stripe_events (id) VALUES ($1)', [event.id]);
    return { received: event.id };
  }
}

/** The same controller after a refactor renamed the class and the method. */
@Controller('webhooks')
class StripeWebhooksController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post('stripe')
  @HttpCode(200)
  @IdempotentHandler({ key: { body: 'id' }, sender: 'stripe', fingerprint: false })
  async onStripeEvent(@Body() event: StripeEvent) {
    await this.idempotency.manager.query('INSERT INTO stripe_events (id) VALUES ($1)', [event.id]);
    return { received: event.id };
  }
}

@Controller('reports')
class ReportsController {
  @Get('latest')
  @IdempotentHandler()
  latest() {
    return { total: 0 };
  }
}

/** Reads the store through the library's entity. */
@Controller('claims')
class ClaimsController {
  constructor(@InjectRepository(ProcessedMessage) private readonly claims: Repository<ProcessedMessage>) {}

  @Get(':key')
  async find(@Param('key') key: string) {
    const claim = await this.claims.findOneBy({ messageId: key });
    return { consumer: claim?.consumer, sender: claim?.sender, responseStatus: claim?.responseStatus };
  }
}

const env = process.env;
const migrations =
  env.MIGRATIONS === 'table-only'
    ? [CreateProcessedMessagesTable1764633600000]
    : [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000];
const controllers: Type[] = [PaymentsController, env.RENAMED ? StripeWebhooksController : StripeWebhookController];
if (env.WITH_GET) {
  controllers.push(ReportsController);
}
const imports: DynamicModule[] = [IdempotencyModule.forRoot({ retention: '7d', senders: { stripe: { redeliveryHorizon: '3d' } }, purge: { interval: false } })];
if (!env.NO_TYPEORM) {
  imports.unshift(
    TypeOrmModule.forRoot({ type: 'postgres', url: env.DATABASE_URL, entities: [ProcessedMessage], migrations, migrationsRun: true }),
    TypeOrmModule.forFeature([ProcessedMessage]),
  );
  controllers.push(ClaimsController);
}

@Module({})
class AppModule {}

const app = await NestFactory.create({ module: AppModule, imports, controllers }, { logger: ['error', 'warn', 'log'] });
await app.listen(Number(env.PORT), '127.0.0.1');
`;

/** The service's unit test of its controller, as the guide's "Testing your controllers" shows, run with plain node. */
const CONTROLLER_UNIT_TEST = `
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { IdempotencyTestingModule } from 'nestjs-idempotent-consumer/testing';
import { PaymentsController } from './payments.controller.js';

const inserts: unknown[][] = [];
const manager = { query: async (_sql: string, parameters: unknown[]) => (inserts.push(parameters), [{ id: inserts.length }]) };

let withoutModule = '';
await Test.createTestingModule({ controllers: [PaymentsController] })
  .compile()
  .catch((error: Error) => (withoutModule = error.message));

const moduleRef = await Test.createTestingModule({
  imports: [IdempotencyTestingModule.forRoot({ manager: manager as never })],
  controllers: [PaymentsController],
}).compile();
const answer = await moduleRef.get(PaymentsController).pay({ order: 'o-1', cents: 500 });
console.log(JSON.stringify({ withoutModule, answer, inserts }));
`;

/**
 * An existing-style service on TypeORM 0.3, made from the packed tarball by following only the
 * guide (libs/idempotency/docs/guide.md), upgrading from a database that 0.2.0 made: items 1 to 12
 * of the adoption issue, each checked on the service as its users would run it.
 */
describe('adopting the package in an existing service on TypeORM 0.3, from its tarball and the guide', () => {
  let db: TestDatabase;
  let folder: string;
  let directory: string;
  let changelog: string;
  const running: DemoProcess[] = [];

  const start = async (env: Record<string, string> = {}, database = db.url) => {
    const app = await startAppProcess(join(directory, 'dist', 'main.js'), { DATABASE_URL: database, ...env }, '/payments');
    running.push(app);
    return app;
  };
  const count = async (sql: string, parameters: unknown[] = []) => (await db.query<{ n: number }>(sql, parameters))[0].n;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'idempotency-adopter-'));
    const packed = await packLibrary(folder);
    expect(packed.files).toEqual(expect.arrayContaining(['CHANGELOG.md', 'docs/guide.md']));
    directory = await scratchApp(
      folder,
      'payments-service',
      packed.tarball,
      {
        '@nestjs/common': installed('@nestjs/common'),
        '@nestjs/core': installed('@nestjs/core'),
        '@nestjs/platform-express': installed('@nestjs/platform-express'),
        '@nestjs/testing': installed('@nestjs/testing'),
        '@nestjs/typeorm': installed('@nestjs/typeorm'),
        pg: installed('pg'),
        'reflect-metadata': installed('reflect-metadata'),
        rxjs: installed('rxjs'),
        typeorm: TYPEORM_0_3,
        '@types/node': installed('@types/node'),
      },
      { 'main.ts': MAIN, 'payments.controller.ts': PAYMENTS_CONTROLLER, 'payments.controller.test.ts': CONTROLLER_UNIT_TEST },
    );
    changelog = await readFile(join(directory, 'node_modules', 'nestjs-idempotent-consumer', 'CHANGELOG.md'), 'utf8');

    // The database as 0.2.0 left it: its table migration (no lease columns) recorded as run, and
    // a Stripe event processed under that version's consumer name, Class.method.
    db = await createTestDatabase();
    const before = await new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: [released('CreateProcessedMessagesTable1764633600000', [TABLE_0_2_0, EXPIRES_INDEX])],
      migrationsRun: true,
    }).initialize();
    await before.destroy();
    await db.query(`CREATE TABLE payments (id serial PRIMARY KEY, order_id text NOT NULL, cents integer NOT NULL)`);
    await db.query(`CREATE TABLE stripe_events (id text NOT NULL)`);
    await db.query(`INSERT INTO stripe_events (id) VALUES ('evt_before_upgrade')`);
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, response_status, response_headers, response_body, expires_at)
       VALUES ('StripeWebhookController.receive', 'evt_before_upgrade', 'stripe', 200, '{"content-type":"application/json; charset=utf-8"}',
               convert_to('{"received":"evt_before_upgrade"}', 'UTF8'), now() + interval '7 days')`,
    );
  });

  afterAll(async () => {
    await Promise.all(running.map((app) => app.kill('SIGKILL')));
    await db?.drop();
    await rm(folder, { recursive: true, force: true });
  });

  it('runs on TypeORM 0.3 (item 8), with a CHANGELOG that says how to upgrade (item 6)', async () => {
    const typeorm = JSON.parse(await readFile(join(directory, 'node_modules', 'typeorm', 'package.json'), 'utf8')) as { version: string };
    expect(typeorm.version).toBe(TYPEORM_0_3);
    expect(changelog).toMatch(/### Upgrading[\s\S]*UpgradeProcessedMessagesTable1796342400000/);
  });

  it("refuses to start on a store without the claim's functions, naming the migration (item 7)", async () => {
    const bare = await createTestDatabase();
    try {
      await expect(start({ MIGRATIONS: 'table-only' }, bare.url)).rejects.toThrow(/IdempotencySchemaError[\s\S]*CreateProcessedMessagesFunctions1796256000000/);
    } finally {
      await bare.drop();
    }
  });

  it('upgrades the database 0.2.0 made and replays what that version processed, then survives a rename (items 1 and 5)', async () => {
    let app = await start();
    const replay = await post(`${app.baseUrl}/webhooks/stripe`, { id: 'evt_before_upgrade' });
    expect(replay).toMatchObject({ status: 200, body: { received: 'evt_before_upgrade' } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await count(`SELECT count(*)::int AS n FROM stripe_events WHERE id = 'evt_before_upgrade'`)).toBe(1);

    expect((await post(`${app.baseUrl}/webhooks/stripe`, { id: 'evt_1' })).status).toBe(200);
    await app.kill();
    app = await start({ RENAMED: '1' });
    const redelivery = await post(`${app.baseUrl}/webhooks/stripe`, { id: 'evt_1' });
    expect(redelivery.headers.get('idempotent-replayed')).toBe('true');
    expect(await count(`SELECT count(*)::int AS n FROM stripe_events WHERE id = 'evt_1'`)).toBe(1);
    await app.kill();
  });

  it('replays every duplicate of a burst on a committed key, and a provider retry whose body changed (items 2 and 3)', async () => {
    const app = await start();
    const payment = { order: 'o-burst', cents: 900 };
    expect((await post(`${app.baseUrl}/payments`, payment, { 'Idempotency-Key': 'pay-burst' })).status).toBe(201);
    const burst = await Promise.all(Array.from({ length: 20 }, () => post(`${app.baseUrl}/payments`, payment, { 'Idempotency-Key': 'pay-burst' })));
    expect(burst.map((answer) => `${answer.status} ${answer.headers.get('idempotent-replayed')}`)).toEqual(Array(20).fill('201 true'));
    expect(await count(`SELECT count(*)::int AS n FROM payments WHERE order_id = 'o-burst'`)).toBe(1);

    expect((await post(`${app.baseUrl}/webhooks/stripe`, { id: 'evt_retry', pending_webhooks: 3 })).status).toBe(200);
    const retry = await post(`${app.baseUrl}/webhooks/stripe?attempt=2`, { id: 'evt_retry', pending_webhooks: 2 });
    expect(retry).toMatchObject({ status: 200, body: { received: 'evt_retry' } });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    await app.kill();
  });

  it('refuses an idempotent GET route at start-up, naming it (item 4)', async () => {
    await expect(start({ WITH_GET: '1' })).rejects.toThrow(/ReportsController\.latest has @IdempotentHandler\(\) on a GET route/);
  });

  it("keeps the service's controller unit test working with IdempotencyTestingModule (item 9)", async () => {
    const { stdout } = await run(process.execPath, [join(directory, 'dist', 'payments.controller.test.js')], { cwd: directory });
    const result = JSON.parse(stdout) as { withoutModule: string; answer: unknown; inserts: unknown[][] };
    expect(result.withoutModule).toMatch(/IdempotencyInterceptor/);
    expect(result.answer).toEqual({ id: 1, order: 'o-1', cents: 500 });
    expect(result.inserts).toEqual([['o-1', 500]]);
  });

  it('reads the store through the exported entity (item 10)', async () => {
    const app = await start();
    expect((await post(`${app.baseUrl}/webhooks/stripe`, { id: 'evt_entity' })).status).toBe(200);
    const claim = await fetch(`${app.baseUrl}/claims/evt_entity`).then((response) => response.json());
    expect(claim).toEqual({ consumer: 'POST /webhooks/stripe', sender: 'stripe', responseStatus: 200 });
    await app.kill();
  });

  it('answers two Idempotency-Key headers 400, and refuses to start without TypeOrmModule, naming it (item 11)', async () => {
    const app = await start();
    const twice = await postJson(`${app.baseUrl}/payments`, { order: 'o-twice', cents: 1 }, { 'Idempotency-Key': ['a', 'b'] });
    expect(twice.status).toBe(400);
    expect(twice.json).toMatchObject({ type: 'urn:idempotency:invalid-key' });
    expect(await count(`SELECT count(*)::int AS n FROM payments WHERE order_id = 'o-twice'`)).toBe(0);
    await app.kill();
    await expect(start({ NO_TYPEORM: '1' })).rejects.toThrow(/TypeOrmModule/);
  });

  it('replays with the Content-Length of the recorded body, not chunked (item 12)', async () => {
    const app = await start();
    const payment = { order: 'o-wire', cents: 42 };
    const first = await postJson(`${app.baseUrl}/payments`, payment, { 'Idempotency-Key': 'pay-wire' });
    const replay = await postJson(`${app.baseUrl}/payments`, payment, { 'Idempotency-Key': 'pay-wire' });
    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-length')).toBe(String(first.bytes.length));
    expect(replay.headers.get('content-length')).toBe(first.headers.get('content-length'));
    expect(replay.headers.has('transfer-encoding')).toBe(false);
    await app.kill();
  });
});
