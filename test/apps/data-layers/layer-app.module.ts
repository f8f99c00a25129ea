import { Body, Controller, type DynamicModule, Get, HttpCode, Inject, Module, Param, Post, type Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterDrizzleOrm } from '@nestjs-cls/transactional-adapter-drizzle-orm';
import { TransactionalAdapterPrisma } from '@nestjs-cls/transactional-adapter-prisma';
import { MikroORM } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect } from 'kysely';
import {
  IdempotencyHealthIndicator,
  IdempotencyModule,
  IdempotencyPurgeService,
  IdempotentHandler,
  IdempotentRunner,
  MikroOrmDataLayer,
  Outbox,
  type OutboxPublisher,
  type OutgoingMessage,
  PgPoolDataLayer,
  type IdempotencyModuleOptions,
} from 'nestjs-idempotent-consumer';
import { ClsModule } from 'nestjs-cls';
import pg from 'pg';
import { roundTrips } from '../adoption/round-trips.js';
import type { LayerName } from './layers.js';
import {
  DB,
  DrizzleClsWriter,
  DrizzleWriter,
  KyselyWriter,
  LayerCreditSchema,
  type LayerWriter,
  MikroOrmWriter,
  type NestedEnding,
  PG_POOL,
  PgWriter,
  PrismaClsWriter,
  PrismaWriter,
  TypeOrmWriter,
} from './layer-writers.js';


const WRITER = Symbol('WRITER');
/** A second pool of the service (an audit database, say): its writes cannot commit with the claim. */
const SECOND_POOL = Symbol('SECOND_POOL');

/** The broker of these services: it keeps the ids the relay sent it, for `GET /announced`. */
class RecordingPublisher implements OutboxPublisher {
  readonly sent: string[] = [];

  async publish(message: OutgoingMessage): Promise<void> {
    this.sent.push(message.id);
  }
}

const ANNOUNCEMENTS = new RecordingPublisher();

interface CreditBody {
  cents: number;
  /** Publish `credit.granted` through the outbox after the write, with this id. */
  announce?: string;
  gate?: string;
  fail?: boolean;
  nested?: NestedEnding;
  /** Credits in transactions of the layer's own that run at once, ended as listed: the i-th writes cents × 10^(i+1). */
  parallel?: NestedEnding[];
  /** Credits written at once, each a statement of its own. */
  concurrent?: number;
  commitItself?: boolean;
}

/** The handlers waiting at each meeting, each with the id of its credit. */
const MEETINGS = new Map<string, { id: string; met: (otherId: string) => void }>();

/** Resolves when a second handler meets at `meeting`, to its credit's id; both resume in the same tick. */
function meet(meeting: string, id: string): Promise<string> {
  return new Promise((met) => {
    const first = MEETINGS.get(meeting);
    if (!first) {
      MEETINGS.set(meeting, { id, met });
      return;
    }
    MEETINGS.delete(meeting);
    first.met(id);
    met(first.id);
  });
}

/** `POST /credits/:account`: an idempotent credit written through the layer; the body says what else the handler does. */
@Controller()
class LayerController {
  constructor(
    @Inject(WRITER) private readonly writer: LayerWriter,
    private readonly purge: IdempotencyPurgeService,
    private readonly health: IdempotencyHealthIndicator,
    private readonly runner: IdempotentRunner,
    @Inject(SECOND_POOL) private readonly secondPool: pg.Pool,
    private readonly outbox: Outbox,
  ) {}

  @Post('credits/:account')
  @IdempotentHandler()
  async credit(@Param('account') account: string, @Body() body: CreditBody) {
    await this.writer.credit(account, body.cents);
    if (body.nested) await this.writer.creditNested(account, body.cents * 100, body.nested);
    if (body.concurrent) await Promise.all(Array.from({ length: body.concurrent }, () => this.writer.credit(account, body.cents)));
    if (body.parallel) await Promise.all(body.parallel.map((ending, i) => this.writer.creditNested(account, body.cents * 10 ** (i + 1), ending)));
    if (body.gate) await this.writer.waitAtGate(body.gate);
    if (body.commitItself) await this.writer.commitItself();
    if (body.announce) await this.outbox.publish({ to: 'recorder', address: 'credits', payload: { account, cents: body.cents }, id: body.announce });
    if (body.fail) throw new Error('the handler fails after its write');
    return { account, cents: body.cents, note: 'é ✓' };
  }

  /**
   * Two handlers that meet: each writes a credit, waits for the other's at `meeting`, and then,
   * both resuming in one tick, reads its own credit and the other's; neither commits before both
   * have read, so the other's is uncommitted when read.
   */
  @Post('meets/:account')
  @IdempotentHandler()
  async meets(@Param('account') account: string, @Body() body: { meeting: string }) {
    const id = await this.writer.creditReturningId(account, 1);
    const otherId = await meet(body.meeting, id);
    const [own, other] = await Promise.all([this.writer.findCredit(id), this.writer.findCredit(otherId)]);
    await meet(`${body.meeting} read`, id);
    return { own, other };
  }

  /** The same credit as work run by `IdempotentRunner.run()`, keyed by the body's `key` (a job's id, say). */
  @Post('runs/:account')
  @HttpCode(200)
  async runCredit(@Param('account') account: string, @Body() body: CreditBody & { key: string }) {
    try {
      const result = await this.runner.run({ consumer: 'layer-run', key: body.key }, async () => {
        await this.writer.credit(account, body.cents);
        if (body.fail) throw new Error('the work fails after its write');
        return { account, cents: body.cents, at: new Date(0) };
      });
      return { result };
    } catch (error) {
      return { error: (error as Error).name };
    }
  }

  /** An idempotent handler whose credit is work run by `run()` (a shared service's, say), keyed by the body's `key`; `fail`: the handler throws after it. */
  @Post('handler-runs/:account')
  @IdempotentHandler()
  async handlerRun(@Param('account') account: string, @Body() body: CreditBody & { key: string }) {
    const result = await this.runner.run({ consumer: 'layer-handler-run', key: body.key }, async () => {
      await this.writer.credit(account, body.cents);
      return { account, cents: body.cents };
    });
    if (body.fail) throw new Error('the handler fails after run()');
    return result;
  }

  /** The same credit run by `run()` in a transaction the service opened itself; `fail`: the service throws after it, rolling back its transaction. */
  @Post('runs-own/:account')
  @HttpCode(200)
  async runInOwnTransaction(@Param('account') account: string, @Body() body: CreditBody & { key: string }) {
    try {
      const result = await this.writer.inOwnTransaction(async (transaction, credit) => {
        const ran = await this.runner.run({ consumer: 'layer-run-own', key: body.key, transaction }, async () => {
          await credit(account, body.cents);
          return { account, cents: body.cents };
        });
        // With an ordering key: its statement takes the key's lock, through each layer's raw SQL.
        if (body.announce) await this.outbox.publish({ to: 'recorder', address: 'credits', payload: { account }, id: body.announce, orderingKey: account }, { transaction });
        if (body.fail) throw new Error('the service fails after run()');
        return ran;
      });
      return { result };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  /** A credit written through the second pool, which escapes the claim: the module warns. */
  @Post('escapes/:account')
  @IdempotentHandler()
  async escapes(@Param('account') account: string, @Body() body: CreditBody) {
    await this.secondPool.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, body.cents]);
    return { account, cents: body.cents };
  }

  /** The same credit in lease mode, on the store of the layer. */
  @Post('leased/:account')
  @IdempotentHandler({ mode: 'lease', lease: '30s' })
  async leased(@Param('account') account: string, @Body() body: CreditBody) {
    await this.writer.credit(account, body.cents);
    return { account, cents: body.cents };
  }

  /** The same write without the module, in the layer's own transaction: the round trips to compare with. */
  @Post('plain/:account')
  async plain(@Param('account') account: string, @Body() body: CreditBody) {
    await this.writer.creditNested(account, body.cents, 'commit');
    return { account, cents: body.cents };
  }

  @Post('purge')
  @HttpCode(200)
  purgeNow() {
    return this.purge.purgeNow();
  }

  @Get('health')
  isHealthy() {
    return this.health.isHealthy();
  }

  @Get('announced')
  announced() {
    return ANNOUNCEMENTS.sent;
  }

  @Get('round-trips')
  roundTrips() {
    return { roundTrips: roundTrips() };
  }
}

/** `@nestjs-cls/transactional` with `adapter`, as a service on it sets it up. */
function clsTransactional(adapter: ConstructorParameters<typeof ClsPluginTransactional>[0]['adapter']): DynamicModule {
  return ClsModule.forRoot({ global: true, middleware: { mount: true }, plugins: [new ClsPluginTransactional({ adapter })] });
}

/** The module's data layer for `layer`: the pool layers all claim on the service's pool. */
function dataLayerOf(layer: LayerName) {
  if (layer === 'typeorm') return undefined;
  return layer === 'mikro-orm' ? new MikroOrmDataLayer({ orm: DB }) : new PgPoolDataLayer({ pool: PG_POOL });
}

/** The service's database module: its pool and its layer's instance. */
@Module({})
class LayerDatabaseModule {}

/** The application's own pool, ended with it. */
class OwnPool extends pg.Pool {
  onApplicationShutdown() {
    return this.end();
  }
}

/**
 * A service on one data layer that adopts the module: its writes go through its own pg Pool,
 * Drizzle or Kysely instance, or TypeORM data source; the module joins them to the claims.
 */
@Module({})
export class LayerAppModule {
  /** @param poolMax The size of the pool the claims take their connections from. */
  static register(layer: LayerName, databaseUrl: string, poolMax = 10): DynamicModule {
    const options: IdempotencyModuleOptions = {
      purge: { interval: false },
      retention: '1h',
      outbox: { publishers: { recorder: ANNOUNCEMENTS }, relay: { pollInterval: '1m' } },
    };
    const pool: Provider = { provide: PG_POOL, useFactory: () => new OwnPool({ connectionString: databaseUrl, max: poolMax }) };
    const byLayer: Record<LayerName, { imports: DynamicModule[]; providers: Provider[] }> = {
      pg: { imports: [], providers: [pool, { provide: WRITER, useClass: PgWriter }] },
      drizzle: {
        imports: [],
        providers: [pool, { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => drizzle({ client }) }, { provide: WRITER, useClass: DrizzleWriter }],
      },
      'drizzle-cls': {
        imports: [clsTransactional(new TransactionalAdapterDrizzleOrm({ drizzleInstanceToken: DB }))],
        providers: [pool, { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => drizzle({ client }) }, { provide: WRITER, useClass: DrizzleClsWriter }],
      },
      kysely: {
        imports: [],
        providers: [
          pool,
          { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new Kysely({ dialect: new PostgresDialect({ pool: client }) }) },
          { provide: WRITER, useClass: KyselyWriter },
        ],
      },
      prisma: {
        imports: [],
        providers: [
          pool,
          { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new PrismaClient({ adapter: new PrismaPg(client) }) },
          { provide: WRITER, useClass: PrismaWriter },
        ],
      },
      'prisma-cls': {
        imports: [clsTransactional(new TransactionalAdapterPrisma({ prismaInjectionToken: DB, sqlFlavor: 'postgresql' }))],
        providers: [
          pool,
          { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new PrismaClient({ adapter: new PrismaPg(client) }) },
          { provide: WRITER, useClass: PrismaClsWriter },
        ],
      },
      'mikro-orm': {
        imports: [],
        providers: [
          {
            provide: DB,
            useFactory: () =>
              MikroORM.init({ driver: PostgreSqlDriver, clientUrl: databaseUrl, entities: [LayerCreditSchema], pool: { min: 0, max: poolMax }, allowGlobalContext: true }),
          },
          { provide: WRITER, useClass: MikroOrmWriter },
        ],
      },
      typeorm: {
        imports: [TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl, extra: { max: poolMax } })],
        providers: [{ provide: WRITER, useClass: TypeOrmWriter }],
      },
    };
    const { imports, providers } = byLayer[layer];
    // The pool and the layer's instance, for every module (the cls plugin's too), as a service's database module gives them.
    const isShared = (provider: Provider) => [PG_POOL, DB].includes((provider as { provide?: symbol }).provide as symbol);
    const shared = providers.filter(isShared);
    const database: DynamicModule = { module: LayerDatabaseModule, global: true, providers: shared, exports: shared.map((provider) => (provider as { provide: symbol }).provide) };
    const own = [...providers.filter((provider) => !isShared(provider)), { provide: SECOND_POOL, useFactory: () => new OwnPool({ connectionString: databaseUrl, max: 2 }) }];
    return {
      module: LayerAppModule,
      imports: [database, ...imports, IdempotencyModule.forRoot({ ...options, dataLayer: dataLayerOf(layer) })],
      controllers: [LayerController],
      providers: own,
    };
  }
}
