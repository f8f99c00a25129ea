import { Body, Controller, type DynamicModule, Get, Inject, Module, Param, Post, type Provider, type Type } from '@nestjs/common';
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
import { IdempotentHandler, MikroOrmDataLayer, PgPoolDataLayer } from 'nestjs-idempotent-consumer';
import { DataLayerContractModule, type DataLayerWriter } from 'nestjs-idempotent-consumer/testing';
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
  MikroOrmWriter,
  PG_POOL,
  PgWriter,
  PrismaClsWriter,
  PrismaWriter,
  TypeOrmWriter,
} from './layer-writers.js';

const WRITER = Symbol('WRITER');
/** A second pool of the service (an audit database, say): its writes cannot commit with the claim. */
const SECOND_POOL = Symbol('SECOND_POOL');

/** What the shipped layers prove beside the contract: the claim adds no round trip, and a write through another pg Pool is warned of. */
@Controller()
class ShippedLayerController {
  constructor(
    @Inject(WRITER) private readonly writer: DataLayerWriter,
    @Inject(SECOND_POOL) private readonly secondPool: pg.Pool,
  ) {}

  /** A credit written through the second pool, which escapes the claim: the module warns. */
  @Post('escapes/:account')
  @IdempotentHandler()
  async escapes(@Param('account') account: string, @Body() body: { cents: number }) {
    await this.secondPool.query('INSERT INTO layer_credits (account, cents) VALUES ($1, $2)', [account, body.cents]);
    return { account, cents: body.cents };
  }

  /** The same write without the module, in the layer's own transaction: the round trips to compare with. */
  @Post('plain/:account')
  async plain(@Param('account') account: string, @Body() body: { cents: number }) {
    await this.writer.creditNested(account, body.cents, 'commit');
    return { account, cents: body.cents };
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
export function dataLayerOf(layer: LayerName) {
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

/** What a service on one layer is given: the modules and providers of its database, and its writer. */
export interface LayerDatabase {
  imports: DynamicModule[];
  providers: Provider[];
  writer: Type<DataLayerWriter>;
}

/**
 * The database of a service on `layer`: its own pool of `poolMax` (or MikroORM's, or TypeORM's),
 * its layer's instance on it, and the writer of credits through it; `prisma` adds options to the
 * Prisma clients (the bench's longer transaction limits under valgrind).
 */
export function layerDatabase(layer: LayerName, databaseUrl: string, poolMax: number, prisma: { transactionOptions?: { maxWait: number; timeout: number } } = {}): LayerDatabase {
  const pool: Provider = { provide: PG_POOL, useFactory: () => new OwnPool({ connectionString: databaseUrl, max: poolMax }) };
  const byLayer: Record<LayerName, LayerDatabase> = {
    pg: { imports: [], providers: [pool], writer: PgWriter },
    drizzle: {
      imports: [],
      providers: [pool, { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => drizzle({ client }) }],
      writer: DrizzleWriter,
    },
    'drizzle-cls': {
      imports: [clsTransactional(new TransactionalAdapterDrizzleOrm({ drizzleInstanceToken: DB }))],
      providers: [pool, { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => drizzle({ client }) }],
      writer: DrizzleClsWriter,
    },
    kysely: {
      imports: [],
      providers: [
        pool,
        { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new Kysely({ dialect: new PostgresDialect({ pool: client }) }) },
      ],
      writer: KyselyWriter,
    },
    prisma: {
      imports: [],
      providers: [
        pool,
        { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new PrismaClient({ adapter: new PrismaPg(client), ...prisma }) },
      ],
      writer: PrismaWriter,
    },
    'prisma-cls': {
      imports: [clsTransactional(new TransactionalAdapterPrisma({ prismaInjectionToken: DB, sqlFlavor: 'postgresql' }))],
      providers: [
        pool,
        { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new PrismaClient({ adapter: new PrismaPg(client), ...prisma }) },
      ],
      writer: PrismaClsWriter,
    },
    'mikro-orm': {
      imports: [],
      providers: [
        {
          provide: DB,
          useFactory: () =>
            MikroORM.init({ driver: PostgreSqlDriver, clientUrl: databaseUrl, entities: [LayerCreditSchema], pool: { min: 0, max: poolMax }, allowGlobalContext: true }),
        },
      ],
      writer: MikroOrmWriter,
    },
    typeorm: {
      imports: [TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl, extra: { max: poolMax } })],
      providers: [],
      writer: TypeOrmWriter,
    },
  };
  return byLayer[layer];
}

/**
 * The contract's service (`DataLayerContractModule`) on one shipped data layer, with the routes
 * the shipped layers prove beside the contract: its writes go through its own pg Pool, Drizzle,
 * Kysely or Prisma instance, MikroORM, or TypeORM data source; the module joins them to the claims.
 */
@Module({})
export class LayerAppModule {
  /** @param poolMax The size of the pool the claims take their connections from. */
  static register(layer: LayerName, databaseUrl: string, poolMax = 10): DynamicModule {
    const { imports, providers, writer } = layerDatabase(layer, databaseUrl, poolMax);
    // The pool and the layer's instance, for every module (the contract's and the cls plugin's too), as a service's database module gives them.
    const database: DynamicModule = { module: LayerDatabaseModule, global: true, providers, exports: providers.map((provider) => (provider as { provide: symbol }).provide) };
    return {
      module: LayerAppModule,
      imports: [DataLayerContractModule.register({ dataLayer: dataLayerOf(layer), writer, imports: [database, ...imports] })],
      controllers: [ShippedLayerController],
      providers: [{ provide: WRITER, useClass: writer }, { provide: SECOND_POOL, useFactory: () => new OwnPool({ connectionString: databaseUrl, max: 2 }) }],
    };
  }
}
