import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as connectNats } from '@nats-io/transport-node';
import amqplib from 'amqplib';
import { Queue } from 'bullmq';
import { createClient } from 'redis';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { NATS_URL, natsAvailable, RABBITMQ_URL, rabbitMqAvailable, REDIS_URL, redisAvailable } from './support/brokers.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { Fauxqs } from './support/fauxqs.js';
import { DOCS, guidePages, shippedDocuments } from './support/guide-pages.js';
import { kafkaBrokerAvailable, startKafkaBroker } from './support/kafka-broker.js';
import { postJson } from './support/post-json.js';
import { installed, packLibrary, run, TSCONFIG } from './support/scratch-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/*
 * Every TypeScript example of the guide's pages (each page its index links to, operations.md
 * among them) and of the package README, compiled and run as a user would: written into a scratch
 * service that installs the packed tarball, compiled with tsc (NodeNext, strict), and the runnable
 * ones started against the real PostgreSQL and brokers, each sent one message and its duplicate.
 *
 * How the guide marks its examples. Every ```ts block follows an HTML comment that names the scratch
 * file it belongs to, under the service's src/examples/:
 *
 *   <!-- example: credit-queue.module.ts -->             the block is that file (blocks naming one
 *                                                         file are joined in their order)
 *   <!-- example: credits.controller.ts in class -->      the block is a fragment, compiled inside the
 *                                                         named wrapper (WRAPPERS below)
 *
 *   <!-- layer example: drizzle src/app.module.ts -->  the block belongs to the service of another data
 *                                                         layer, which test/adopter-layers.<layer>.e2e-spec.ts build
 *
 * Wrappers: `class` (class members: a controller whose constructor has `credits`, `payments`,
 * `orders` and `idempotency`), `decorators` (decorators of one method), `statements` (the body of
 * `async function example({ app, url, queue })`), `file` (top-level code). A wrapped fragment gets
 * the imports it uses and lacks from PRELUDE, and an elided body, `{ ... }`, is compiled as `{}`.
 * What an example calls "yours" (CreditsService, PaymentsService, the Payment entity, a guard) is in
 * SUPPORT. A ```ts block without a marker fails the suite, and so does a block that does not
 * compile or run, named by its line in the guide.
 *
 * Broker objects are shared with other suites: in the files of the broker examples, string literals
 * that start with `credits`, `payments` or `CREDITS` get a prefix unique to the run.
 */

/** The documents whose examples are compiled: the guide's pages, in its index's order, and the package README. */
const DOCUMENTS = [...guidePages(), 'libs/idempotency/README.md'];
const PREFIX = `guide-e2e-${process.pid}-${Date.now()}-`;

type Wrapper = 'class' | 'decorators' | 'statements' | 'file';

/** One marked ```ts block of a document. */
interface Example {
  readonly document: string;
  /** The line of its opening fence. */
  readonly line: number;
  readonly file: string;
  readonly wrapper: Wrapper | undefined;
  readonly code: string;
}

/** The marked examples of a document, and the lines of the ```ts blocks without a marker. */
function examplesOf(document: string, markdown: string): { examples: Example[]; unmarked: number[] } {
  const examples: Example[] = [];
  const unmarked: number[] = [];
  const lines = markdown.split('\n');
  let marker: { file: string; wrapper: Wrapper | undefined } | 'elsewhere' | undefined;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const named = /^<!-- example: (\S+)(?: in (class|decorators|statements|file))? -->$/.exec(line);
    if (named) {
      marker = { file: named[1], wrapper: named[2] as Wrapper | undefined };
      continue;
    }
    if (/^<!-- layer example: \S+ \S+ -->$/.test(line)) {
      marker = 'elsewhere';
      continue;
    }
    const fence = /^(\s*)```(\w*)/.exec(line);
    if (!fence) {
      marker = line.trim() === '' ? marker : undefined;
      continue;
    }
    const end = lines.findIndex((candidate, at) => at > index && candidate.startsWith(`${fence[1]}\`\`\``));
    if (fence[2] === 'ts') {
      const code = lines.slice(index + 1, end).join('\n');
      if (marker === 'elsewhere') {
        // Compiled and run by the suite of that layer's service.
      } else if (marker) {
        examples.push({ document, line: index + 1, file: marker.file, wrapper: marker.wrapper, code });
      } else {
        unmarked.push(index + 1);
      }
    }
    marker = undefined;
    index = end;
  }
  return { examples, unmarked };
}

/** Imports a wrapped fragment may use without writing them, by name. */
const PRELUDE: Record<string, string> = {
  ...Object.fromEntries(
    ['Body', 'CallHandler', 'Controller', 'Delete', 'ExecutionContext', 'Get', 'HttpCode', 'HttpException', 'Inject', 'Injectable', 'INestApplication', 'Module', 'Param', 'Post', 'Query', 'Req', 'UseGuards'].map(
      (name) => [name, '@nestjs/common'],
    ),
  ),
  ...Object.fromEntries(['EventPattern', 'MessagePattern', 'Payload', 'RmqOptions', 'Transport'].map((name) => [name, '@nestjs/microservices'])),
  Header: '@nestjs/common',
  TypeOrmModule: '@nestjs/typeorm',
  HealthCheck: '@nestjs/terminus',
  HealthCheckService: '@nestjs/terminus',
  TypeOrmHealthIndicator: '@nestjs/terminus',
  register: 'prom-client',
  IdempotencyHealthIndicator: 'nestjs-idempotent-consumer',
  Test: '@nestjs/testing',
  Processor: '@nestjs/bullmq',
  WorkerHost: '@nestjs/bullmq',
  Job: 'bullmq',
  ...Object.fromEntries(
    [
      'CreateProcessedMessagesFunctions1796256000000',
      'CreateProcessedMessagesTable1764633600000',
      'UpgradeProcessedMessagesTable1796342400000',
      'IdempotencyAdmin',
      'IdempotencyContext',
      'IdempotencyInterceptor',
      'IdempotencyModule',
      'IdempotentHandler',
      'Outbox',
      'OutboxAdmin',
      'ProcessedMessage',
      'RedisLeaseStore',
    ].map((name) => [name, 'nestjs-idempotent-consumer']),
  ),
  IdempotencyTestingModule: 'nestjs-idempotent-consumer/testing',
  DataLayerContractModule: 'nestjs-idempotent-consumer/testing',
  NestFactory: '@nestjs/core',
  ...Object.fromEntries(
    ['KNEX', 'KnexDataLayer', 'layer', 'KnexWriter', 'KnexModule', 'startMyApp', 'db', 'describe', 'it', 'beforeAll', 'afterAll'].map((name) => [name, './knex-layer.js']),
  ),
  leaseStoreContract: 'nestjs-idempotent-consumer/testing',
  CreditsService: './credits.service.js',
  PaymentsService: './payments.service.js',
  PaymentsController: './payments.controller.js',
  ...Object.fromEntries(
    [
      'AuthGuard',
      'CreditGranted',
      'dataSource',
      'ExampleRuntime',
      'fakeManager',
      'GrantCredit',
      'logger',
      'messageId',
      'myStore',
      'OrderDto',
      'OrdersService',
      'PaymentEvent',
      'payments',
      'PaymentSucceeded',
      'Roles',
      'RolesGuard',
      'StripeEvent',
      'yourEntities',
      'yourMigrations',
    ].map((name) => [name, './guide-support.js']),
  ),
};

const WRAPPERS: Record<Wrapper, (code: string) => string> = {
  class: (code) =>
    [
      '@Controller()',
      'export class Example {',
      '  constructor(',
      '    protected readonly credits: CreditsService,',
      '    protected readonly payments: PaymentsService,',
      '    protected readonly orders: OrdersService,',
      '    protected readonly idempotency: IdempotencyContext,',
      '  ) {}',
      code,
      '}',
    ].join('\n'),
  decorators: (code) => ['export class Example {', code, '  handle(): void {}', '}'].join('\n'),
  statements: (code) => ['export async function example({ app, url, queue }: ExampleRuntime): Promise<void> {', code, '}'].join('\n'),
  file: (code) => code,
};

const IMPORT = /^import\s[^;]*;\n?/gm;

/** The names an import statement brings in. */
function importedNames(statement: string): string[] {
  const clause = /^import\s+(?:type\s+)?([\s\S]*?)\s+from\s/.exec(statement)?.[1] ?? '';
  const braces = /\{([\s\S]*)\}/.exec(clause)?.[1] ?? '';
  const named = braces.split(',').map((part) => part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop()!.trim());
  const outside = clause.replace(/\{[\s\S]*\}/, '').split(',').map((part) => part.trim().replace(/^\*\s+as\s+/, ''));
  return [...named, ...outside].filter((name) => /^\w+$/.test(name));
}

/** A scratch file: its text, and where each of its lines came from. */
interface ScratchFile {
  text: string;
  /** For each line (0-based), the guide line it came from, if any. */
  origins: (string | undefined)[];
}

/** Builds one scratch file from the examples that name it. */
function scratchFile(examples: Example[]): ScratchFile {
  const wrapped = examples.filter((example) => example.wrapper !== undefined);
  if (wrapped.length > 0 && examples.length > 1) {
    throw new Error(`${examples.map((example) => `${example.document}:${example.line}`).join(', ')} share the file ${examples[0].file}: a wrapped fragment needs a file of its own`);
  }
  const [first] = examples;
  if (first.wrapper === undefined) {
    const origins: (string | undefined)[] = [];
    const parts = examples.map((example) => {
      example.code.split('\n').forEach((_, at) => origins.push(`${example.document}:${example.line + 1 + at}`));
      return example.code;
    });
    return { text: parts.join('\n'), origins };
  }
  const imports = first.code.match(IMPORT) ?? [];
  const code = first.code.replace(IMPORT, (statement) => '\n'.repeat(statement.split('\n').length - 1)).replace(/\{ \.\.\. \}/g, '{}');
  const body = WRAPPERS[first.wrapper](code);
  const own = new Set(imports.flatMap(importedNames));
  const declared = new Set([...body.matchAll(/(?:class|const|let|function|interface|type)\s+(\w+)/g)].map((match) => match[1]));
  const needed = new Map<string, string[]>();
  for (const [name, from] of Object.entries(PRELUDE)) {
    if (!own.has(name) && !declared.has(name) && new RegExp(`\\b${name}\\b`).test(body)) {
      needed.set(from, [...(needed.get(from) ?? []), name]);
    }
  }
  const prelude = [...needed].map(([from, names]) => `import { ${names.join(', ')} } from '${from}';`);
  const head = [...prelude, ...imports.map((statement) => statement.trimEnd())].join('\n').split('\n');
  const wrapperLines = WRAPPERS[first.wrapper]('\u0000').split('\n');
  const before = wrapperLines.indexOf('\u0000');
  const origins: (string | undefined)[] = [...head.map(() => undefined), ...wrapperLines.slice(0, before).map(() => undefined)];
  code.split('\n').forEach((_, at) => origins.push(`${first.document}:${first.line + 1 + at}`));
  return { text: `${head.join('\n')}\n${body}\n`, origins };
}

/** What the examples call "yours": the services, the entity and the types they use, written beside them. */
const SUPPORT: Record<string, string> = {
  'examples/credits.service.ts': `
import { Injectable } from '@nestjs/common';
import { IdempotencyContext } from 'nestjs-idempotent-consumer';

/** Grants credits in the claim's transaction: one row per grant, the balance answered. */
@Injectable()
export class CreditsService {
  constructor(private readonly idempotency: IdempotencyContext) {}

  async grant(account: string, cents: number): Promise<number> {
    await this.idempotency.manager.query('INSERT INTO credits (account, cents) VALUES ($1, $2)', [account, cents]);
    const [{ balance }] = await this.idempotency.manager.query<{ balance: number }[]>(
      'SELECT sum(cents)::int AS balance FROM credits WHERE account = $1',
      [account],
    );
    return balance;
  }
}
`,
  'examples/payment.entity.ts': `
import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('payments')
export class Payment {
  @PrimaryColumn('text') id!: string;
  @Column('int') cents!: number;
}
`,
  'examples/payments.service.ts': `
import { Injectable } from '@nestjs/common';
import { IdempotencyContext } from 'nestjs-idempotent-consumer';
import { Payment } from './payment.entity.js';

/** Captures payments in the claim's transaction: one row per order. */
@Injectable()
export class PaymentsService {
  constructor(private readonly idempotency: IdempotencyContext) {}

  async capture(orderId: string, cents: number): Promise<{ captured: string }> {
    await this.idempotency.manager.insert(Payment, { id: orderId, cents });
    return { captured: orderId };
  }

  async charge(order: string | { id: string; cents: number }, how: number | { idempotencyKey: string }): Promise<{ chargeId: string }> {
    return { chargeId: \`ch_\${typeof order === 'string' ? order : order.id}_\${typeof how === 'number' ? how : how.idempotencyKey}\` };
  }

  async apply(event: { id: string; cents: number }): Promise<void> {
    await this.idempotency.manager.insert(Payment, { id: event.id, cents: event.cents });
  }
}
`,
  'examples/knex-layer.ts': `
import type { Type } from '@nestjs/common';
import type { IdempotencyDataLayer } from 'nestjs-idempotent-consumer';
import type { DataLayerService, DataLayerWriter } from 'nestjs-idempotent-consumer/testing';

interface PoolClient {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  release(): void;
}

// Yours, in docs/custom-data-layer.md: the knex layer, its writer and module, a start of your
// contract service, a pg Pool on its database, and the test runner's functions. The project's own
// knex layer, proven by the contract, is test/apps/knex-layer.
export declare const KNEX: unknown;
export declare const KnexDataLayer: new (knex: unknown) => IdempotencyDataLayer;
export declare const layer: IdempotencyDataLayer;
export declare const KnexWriter: Type<DataLayerWriter>;
export declare class KnexModule {}
export declare function startMyApp(env: { POOL_MAX?: number }): Promise<DataLayerService>;
export declare const db: { query(sql: string, params?: unknown[]): Promise<{ rows: any[] }>; connect(): Promise<PoolClient> };
export declare function describe(name: string, body: () => void): void;
export declare function it(name: string, body: () => Promise<void>, timeoutMs?: number): void;
export declare function beforeAll(body: () => Promise<unknown>): void;
export declare function afterAll(body: () => Promise<unknown> | unknown): void;
`,
  'examples/guide-support.ts': `
import { type CanActivate, type INestApplication, Injectable, SetMetadata, type Type } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { LeaseStore } from 'nestjs-idempotent-consumer';
import type { DataSource, EntityManager, MigrationInterface } from 'typeorm';

export interface GrantCredit { account: string; cents: number }
export interface PaymentEvent { id: string; cents: number }
export interface StripeEvent { id: string; pending_webhooks?: number }
export interface OrderDto { item: string }
export interface PaymentSucceeded { id: string; cents: number }
export interface CreditGranted { account: string; cents: number }

/** What a \`statements\` example is given. */
export interface ExampleRuntime { app: INestApplication; url: string; queue: Queue }

@Injectable()
export class OrdersService {
  async find(id: string): Promise<{ id: string; cents: number }> {
    return { id, cents: 500 };
  }
}

/** Stand-ins for @nestjs/passport's AuthGuard and a roles guard. */
export function AuthGuard(_strategy: string): Type<CanActivate> {
  return class implements CanActivate {
    canActivate(): boolean {
      return true;
    }
  };
}
export class RolesGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}
export const Roles = (...roles: string[]) => SetMetadata('roles', roles);

export const yourMigrations: (new () => MigrationInterface)[] = [];
export const yourEntities: (new () => object)[] = [];
export let dataSource!: DataSource;
export let messageId!: string;
export let fakeManager!: EntityManager;
export let myStore!: LeaseStore;
export const payments = { charge: async () => ({ chargeId: 'ch_1' }) };
export const logger = { log: (message: unknown) => console.log(message) };
`,
};

/** The processes that run examples: each boots what the guide shows and listens on PORT once ready. */
const RUNNERS: Record<string, string> = {
  'run/app.ts': `
import 'reflect-metadata';
import { type DynamicModule, type INestApplication, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyModule, ProcessedMessage } from 'nestjs-idempotent-consumer';
import dataSource from '../examples/data-source.js';
import { CreditsService } from '../examples/credits.service.js';
import { OrdersService } from '../examples/guide-support.js';
import { Payment } from '../examples/payment.entity.js';
import { PaymentsService } from '../examples/payments.service.js';

/** The service around the examples: the guide's data source, the module, the services they use. */
export async function start(
  parts: { imports?: (Type | DynamicModule)[]; controllers?: Type[]; providers?: Type[] },
  beforeListen?: (app: INestApplication) => Promise<void>,
): Promise<INestApplication> {
  @Module({})
  class RunModule {}
  const app = await NestFactory.create(
    {
      module: RunModule,
      imports: [
        TypeOrmModule.forRoot({ ...dataSource.options, entities: [ProcessedMessage, Payment], migrationsRun: true }),
        IdempotencyModule.forRoot({ retention: '7d', purge: { interval: false } }),
        ...(parts.imports ?? []),
      ],
      controllers: parts.controllers ?? [],
      providers: [CreditsService, PaymentsService, OrdersService, ...(parts.providers ?? [])],
    },
    { logger: ['error', 'warn', 'log'] },
  );
  // SIGTERM closes the app: consumers are cancelled and the handlers in flight settle their
  // messages before the connection closes, so what a test finds on the queue afterwards is
  // what the module left unsettled, not a copy whose ack the signal cut off.
  app.enableShutdownHooks();
  await app.init();
  await beforeListen?.(app);
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  return app;
}
`,
  'run/http.main.ts': `
import { Example as CreditsController } from '../examples/credits.controller.js';
import { Example as OrdersController } from '../examples/orders.controller.js';
import { start } from './app.js';

await start({ controllers: [CreditsController, OrdersController] });
`,
  'run/rmq.main.ts': `
import type { Queue } from 'bullmq';
import { Example } from '../examples/credits.rmq.controller.js';
import { example } from '../examples/rmq.bootstrap.js';
import { start } from './app.js';

await start({ controllers: [Example] }, async (app) => {
  await example({ app, url: process.env.RABBITMQ_URL!, queue: undefined as unknown as Queue });
  await app.startAllMicroservices();
});
`,
  'run/jetstream.main.ts': `
import type { Queue } from 'bullmq';
import { Example } from '../examples/credits.jetstream.controller.js';
import { example } from '../examples/jetstream.bootstrap.js';
import { start } from './app.js';

await start({ controllers: [Example] }, (app) => example({ app, url: process.env.NATS_URL!, queue: undefined as unknown as Queue }));
`,
  'run/kafka.main.ts': `
import type { Queue } from 'bullmq';
import { Example } from '../examples/credits.kafka.controller.js';
import { example } from '../examples/kafka.bootstrap.js';
import { start } from './app.js';

await start({ controllers: [Example] }, (app) => example({ app, url: process.env.KAFKA_BROKER!, queue: undefined as unknown as Queue }));
`,
  'run/sqs.main.ts': `
import { CreditQueueModule } from '../examples/credit-queue.module.js';
import { start } from './app.js';

await start({ imports: [CreditQueueModule] });
`,
  'run/golevelup.main.ts': `
import { PaymentsModule } from '../examples/payments.consumer.js';
import { start } from './app.js';

await start({ imports: [PaymentsModule] });
`,
  'run/graphql.main.ts': `
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { CreditsResolver } from '../examples/credits.resolver.js';
import { start } from './app.js';

/** A schema needs a query. */
@Resolver()
class PingResolver {
  @Query(() => String)
  ping(): string {
    return 'pong';
  }
}

await start({ imports: [GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true })], providers: [CreditsResolver, PingResolver] });
`,
  'run/bullmq.main.ts': `
import { BullModule, getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { createClient } from 'redis';
import { PaymentsProcessor } from '../examples/payments.processor.js';
import { example } from '../examples/payments.producer.js';
import { start } from './app.js';

const app = await start({
  imports: [BullModule.forRoot({ connection: createClient({ url: process.env.REDIS_URL }) }), BullModule.registerQueue({ name: 'payments' })],
  providers: [PaymentsProcessor],
});
const queue = app.get<Queue>(getQueueToken('payments'));
await example({ app, url: process.env.REDIS_URL!, queue });
// The same order again under another job id: a duplicate by its key, the order id.
await queue.add('capture', { orderId: 'o-42', cents: 500 }, { jobId: 'capture-o-42-again' });
`,
};

/** The files whose broker names get the run's prefix. */
const PREFIXED = /^(run\/|examples\/(rmq\.bootstrap|jetstream\.bootstrap|credits\.jetstream\.controller|jetstream-publish|credit-queue\.module|payments\.consumer|payments\.processor|payments\.producer)\.ts$)/;
const withPrefix = (text: string) => text.replace(/'(credits|payments|CREDITS)(?=[.'-])/g, `'${PREFIX}$1`);

/** The scratch service's tsconfig: the suites' own, with Jest's types for the testing example and no check of the peers' declarations. */
const EXAMPLES_TSCONFIG = {
  ...TSCONFIG,
  compilerOptions: { ...TSCONFIG.compilerOptions, skipLibCheck: true, types: ['node', 'jest'] },
};

/** Maps tsc's `src/x.ts(12,5): error ...` lines to the guide's lines. */
function locate(output: string, files: Map<string, ScratchFile>): string {
  return output.replace(/^src\/(\S+?)\((\d+),(\d+)\)/gm, (whole, path: string, line: string) => {
    const origin = files.get(path)?.origins[Number(line) - 1];
    return origin ? `${origin} (${whole})` : `${whole} (wrapper of a guide example)`;
  });
}

describe('the guide\'s examples, compiled and run from the packed tarball', () => {
  const parsed = DOCUMENTS.map((document) => examplesOf(document, readFileSync(document, 'utf8')));
  const examples = parsed.flatMap((found) => found.examples);
  const unmarked = parsed.flatMap((found, at) => found.unmarked.map((line) => `${DOCUMENTS[at]}:${line}`));
  const byFile = new Map<string, Example[]>();
  for (const example of examples) {
    byFile.set(example.file, [...(byFile.get(example.file) ?? []), example]);
  }
  /** The guide lines of a scratch file's examples, for a failure's message. */
  const where = (...files: string[]) => files.map((file) => (byFile.get(file) ?? []).map((example) => `${example.document}:${example.line}`).join(', ')).join('; ');

  let folder: string;
  let directory: string;
  let compiled: Error | undefined;
  let db: TestDatabase;
  const running: DemoProcess[] = [];
  const count = async (sql: string, parameters: unknown[] = []) => Number((await db.query<{ n: string }>(sql, parameters))[0].n);

  /**
   * Runs `body`; a failure names the guide lines of the examples it runs. (tsc emits what it can
   * despite a type error, which the compile test reports, so each example still runs on its own.)
   */
  async function scenario(files: string[], body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      const output = running.map((app) => app.output()).join('\n').slice(-4_000);
      throw new Error(`the examples at ${where(...files)} failed: ${(error as Error).message}\n${output}`, { cause: error });
    }
  }

  async function startRunner(name: string, env: Record<string, string> = {}): Promise<DemoProcess> {
    const app = await startAppProcess(join(directory, 'dist', 'run', `${name}.main.js`), { DATABASE_URL: db.url, NO_COLOR: '1', ...env }, '/');
    running.push(app);
    return app;
  }

  async function stopRunners(): Promise<void> {
    await Promise.all(running.splice(0).map((app) => app.kill()));
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    folder = await mkdtemp(join(tmpdir(), 'idempotency-guide-'));
    const packed = await packLibrary(folder);
    directory = join(folder, 'guide-service');
    const nest12 = { '@nestjs/common': '$@nestjs/common', '@nestjs/core': '$@nestjs/core' };
    const manifest = {
      name: 'guide-service',
      private: true,
      type: 'module',
      dependencies: {
        'nestjs-idempotent-consumer': `file:${packed.tarball}`,
        ...Object.fromEntries(
          [
            '@nestjs/common',
            '@nestjs/core',
            '@nestjs/platform-express',
            '@nestjs/microservices',
            '@nestjs/typeorm',
            '@nestjs/testing',
            '@nestjs/terminus',
            'prom-client',
            '@nestjs/bullmq',
            'bullmq',
            '@golevelup/nestjs-rabbitmq',
            '@ssut/nestjs-sqs',
            '@aws-sdk/client-sqs',
            '@nestjs-plugins/nestjs-nats-jetstream-transport',
            '@nats-io/jetstream',
            '@nats-io/transport-node',
            'kafkajs',
            '@nestjs/graphql',
            '@nestjs/apollo',
            '@apollo/server',
            '@as-integrations/express5',
            'graphql',
            'amqplib',
            'amqp-connection-manager',
            'typeorm',
            'pg',
            'reflect-metadata',
            'rxjs',
            'supertest',
            'jest',
            '@jest/globals',
            '@types/node',
            '@types/jest',
            '@types/supertest',
            '@types/amqplib',
          ].map((name) => [name, installed(name)]),
        ),
        // As the guide's supported versions say: TypeORM 0.3 declares redis ^3 || ^4 || ^5 as an optional peer, so a
        // service on it takes redis 5 for the Redis lease store (the module takes 5 or 6).
        redis: installed('typeorm').startsWith('0.3.') ? '^5.0.0' : installed('redis'),
        vitest: '^4.0.0', // the line that runs on Node 20, like the library
        // bullmq and @nestjs/microservices accept any ioredis and TypeORM 1.1 asks for 5: without a
        // choice npm picks 6 and stops on ERESOLVE.
        ioredis: '^5.0.0',
      },
      overrides: { '@golevelup/nestjs-rabbitmq': nest12, '@golevelup/nestjs-discovery': nest12, '@ssut/nestjs-sqs': nest12 },
      jest: { rootDir: 'dist/examples', testMatch: ['**/payments.controller.spec.js'], transform: {} },
    };
    const files = new Map<string, ScratchFile>();
    for (const [file, group] of byFile) {
      files.set(`examples/${file}`, scratchFile(group));
    }
    for (const [path, text] of Object.entries({ ...SUPPORT, ...RUNNERS })) {
      files.set(path, { text, origins: [] });
    }
    await mkdir(join(directory, 'src'), { recursive: true });
    await writeFile(join(directory, 'package.json'), JSON.stringify(manifest, null, 2));
    await writeFile(join(directory, 'tsconfig.json'), JSON.stringify(EXAMPLES_TSCONFIG, null, 2));
    await writeFile(join(directory, 'vitest.config.js'), `export default { test: { include: ['dist/examples/payments.controller.vitest.spec.js'], exclude: [] } };\n`);
    for (const [path, file] of files) {
      await mkdir(dirname(join(directory, 'src', path)), { recursive: true });
      await writeFile(join(directory, 'src', path), PREFIXED.test(path) ? withPrefix(file.text) : file.text);
    }
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: directory, timeout: 400_000 });
    try {
      await run(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: directory, timeout: 180_000 });
    } catch (error) {
      compiled = new Error(`the guide's examples do not compile:\n${locate((error as Error).message, files)}`);
    }
  }, 600_000);

  afterEach(stopRunners);

  afterAll(async () => {
    await stopRunners();
    await db?.drop();
    if (folder) {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('marks every ```ts block of the guide\'s pages and the README with the scratch file it belongs to', () => {
    expect(examplesOf('x.md', '<!-- example: a.ts -->\n```ts\nconst a = 1;\n```\n\n```ts\nb\n```\n<!-- example: c.ts in class -->\n\n```ts\nc() {}\n```').unmarked).toEqual([6]);
    expect(unmarked).toEqual([]);
    expect(examples.length).toBeGreaterThan(35);
    expect(DOCUMENTS).toEqual(expect.arrayContaining(shippedDocuments().filter((document) => document.startsWith(`${DOCS}/`))));
  });

  it('compiles every example with tsc (NodeNext, strict) against the packed tarball', () => {
    if (compiled) {
      throw compiled;
    }
  });

  it('runs the data source of "From the TypeORM CLI" through the TypeORM CLI: the library\'s migrations, then the service\'s', async () => {
    await scenario(['data-source.ts', 'migrations/1796500000000-create-ledger.ts'], async () => {
      const cli = ['node_modules/typeorm/cli.js', 'migration:run', '-d', 'dist/examples/data-source.js'];
      await run(process.execPath, cli, { cwd: directory, timeout: 60_000, env: { ...process.env, DATABASE_URL: db.url } });
      const recorded = await db.query<{ name: string }>('SELECT name FROM migrations ORDER BY id');
      expect(recorded.map((row) => row.name)).toEqual([
        'CreateProcessedMessagesTable1764633600000',
        'CreateProcessedMessagesFunctions1796256000000',
        'UpgradeProcessedMessagesTable1796342400000',
        'CreateLedger1796500000000',
      ]);
      expect(await count(`SELECT count(*) AS n FROM pg_proc WHERE proname IN ('processed_messages_claim', 'processed_messages_record')`)).toBe(2);
      const again = await run(process.execPath, cli, { cwd: directory, timeout: 60_000, env: { ...process.env, DATABASE_URL: db.url } });
      expect(again.stdout).toContain('No migrations are pending');
    });
  });

  it('"A controller" and "Lease mode": a request and its retry with one Idempotency-Key run once, the retry replayed', async () => {
    await scenario(['credits.controller.ts', 'orders.controller.ts'], async () => {
      const app = await startRunner('http');
      const send = () => postJson(`${app.baseUrl}/credits`, { account: 'acc-http', cents: 500 }, { 'Idempotency-Key': 'guide-http-1' });
      const first = await send();
      const retry = await send();
      expect([first.status, retry.status, retry.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
      expect(retry.json).toEqual({ balance: 500 });
      expect(retry.bytes).toEqual(first.bytes);
      expect(await count(`SELECT count(*) AS n FROM credits WHERE account = 'acc-http'`)).toBe(1);

      const charge = () => postJson(`${app.baseUrl}/orders/o-7/charge`, {}, { 'Idempotency-Key': 'guide-lease-1' });
      const charged = await charge();
      const again = await charge();
      expect([charged.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
      expect(again.bytes).toEqual(charged.bytes);
      expect(charged.json).toEqual({ chargeId: expect.stringMatching(/^ch_o-7_[0-9a-f]{64}$/) });
      expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'POST /orders/:id/charge'`)).toBe(1);
    });
  });

  it('"A GraphQL mutation": a mutation and its retry with one Idempotency-Key grant once, the retry replayed; the key reused with other arguments is IDEMPOTENCY_KEY_REUSED', async () => {
    await scenario(['credits.resolver.ts'], async () => {
      const app = await startRunner('graphql');
      const query = 'mutation Grant($input: GrantCreditInput!) { grantCredit(input: $input) { account balance } }';
      const send = (cents: number) => postJson(`${app.baseUrl}/graphql`, { query, variables: { input: { account: 'acc-gql', cents } } }, { 'Idempotency-Key': 'guide-gql-1' });
      const first = await send(500);
      const retry = await send(500);
      expect(first.json).toEqual({ data: { grantCredit: { account: 'acc-gql', balance: 500 } } });
      expect([first.headers.get('idempotent-replayed'), retry.headers.get('idempotent-replayed')]).toEqual([null, 'true']);
      expect(retry.json).toEqual(first.json);
      const reused = await send(600);
      expect(reused.json).toMatchObject({ data: null, errors: [{ extensions: { code: 'IDEMPOTENCY_KEY_REUSED', type: 'urn:idempotency:key-reused', status: 422 } }] });
      expect(await count(`SELECT count(*) AS n FROM credits WHERE account = 'acc-gql'`)).toBe(1);
      expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer = 'graphql Mutation.grantCredit'`)).toBe(1);
    });
  });

  describe('with RabbitMQ', () => {
    let connection: amqplib.ChannelModel | undefined;
    let channel: amqplib.Channel;
    const queues = { credits: `${PREFIX}credits`, creditsDead: `${PREFIX}credits.dead`, payments: `${PREFIX}payments`, paymentsDead: `${PREFIX}payments.dead` };
    const ready = async (queue: string) => (await channel.checkQueue(queue)).messageCount;

    beforeAll(async () => {
      if (await rabbitMqAvailable()) {
        connection = await amqplib.connect(RABBITMQ_URL);
        channel = await connection.createChannel();
      }
    });
    afterAll(async () => {
      for (const queue of Object.values(queues)) {
        await channel?.deleteQueue(queue).catch(() => undefined);
      }
      await connection?.close();
    });

    it('"RabbitMQ: who acks": a message published twice with one messageId grants once; one without a key reaches the dead-letter queue the example declares', async () => {
      if (!connection) {
        return;
      }
      await scenario(['rmq.bootstrap.ts', 'credits.rmq.controller.ts'], async () => {
        await startRunner('rmq', { RABBITMQ_URL });
        expect(await ready(queues.creditsDead)).toBe(0); // declared by the example, before any message
        const packet = Buffer.from(JSON.stringify({ pattern: 'credit.grant', data: { account: 'acc-rmq', cents: 500 } }));
        channel.sendToQueue(queues.credits, packet, { messageId: 'guide-rmq-1', persistent: true });
        channel.sendToQueue(queues.credits, packet, { messageId: 'guide-rmq-1', persistent: true });
        channel.sendToQueue(queues.credits, packet, { persistent: true });
        await until(async () => (await ready(queues.creditsDead)) === 1, 'the keyless message is dead-lettered', 30_000);
        await until(async () => (await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'guide-rmq-1'`)) === 1, 'the message is processed');
        await stopRunners(); // a graceful stop: a copy the module left unsettled returns to the queue
        expect(await ready(queues.credits)).toBe(0);
        expect(await count(`SELECT count(*) AS n FROM credits WHERE account = 'acc-rmq'`)).toBe(1);
      });
    });

    it('"RabbitMQ through @golevelup/nestjs-rabbitmq": one payment published twice is one row; a poison message lands in the dead-letter queue the example declares', async () => {
      if (!connection) {
        return;
      }
      await scenario(['payments.consumer.ts'], async () => {
        await startRunner('golevelup', { RABBITMQ_URL });
        expect(await ready(queues.paymentsDead)).toBe(0); // declared by the example, before any message
        const payment = Buffer.from(JSON.stringify({ id: 'guide-pay-1', cents: 700 }));
        channel.sendToQueue(queues.payments, payment, { messageId: 'guide-golevelup-1', persistent: true });
        channel.sendToQueue(queues.payments, payment, { messageId: 'guide-golevelup-1', persistent: true });
        channel.sendToQueue(queues.payments, Buffer.from(JSON.stringify({ id: 'guide-pay-poison', cents: 1 })), { persistent: true });
        await until(async () => (await ready(queues.paymentsDead)) === 1, 'the poison message is dead-lettered', 30_000);
        await until(async () => (await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'guide-golevelup-1'`)) === 1, 'the payment is processed');
        await stopRunners();
        expect(await ready(queues.payments)).toBe(0);
        expect(await count(`SELECT count(*) AS n FROM payments WHERE id LIKE 'guide-pay-%'`)).toBe(1);
      });
    });
  });

  it('"NATS JetStream": the worker starts, and a grant published twice with one msgID is one row', async () => {
    if (!(await natsAvailable())) {
      return;
    }
    const nats = await connectNats({ servers: NATS_URL });
    const jsm = await jetstreamManager(nats);
    try {
      await scenario(['jetstream.bootstrap.ts', 'credits.jetstream.controller.ts', 'jetstream-publish.ts'], async () => {
        await startRunner('jetstream', { NATS_URL });
        for (let copy = 0; copy < 2; copy++) {
          await run(process.execPath, ['dist/examples/jetstream-publish.js'], { cwd: directory, timeout: 30_000, env: { ...process.env, NATS_URL } });
        }
        await until(async () => (await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'grant-42'`)) === 1, 'the grant is processed');
        // The plugin names the durable consumer '<durable>-<subject>'.
        const durable = `${PREFIX}credits-${PREFIX}credits_grant`;
        const consumer = await jsm.consumers.info(`${PREFIX}CREDITS`, durable);
        await until(async () => (await jsm.consumers.info(`${PREFIX}CREDITS`, durable)).num_ack_pending === 0, 'the grant is acked');
        expect(consumer.config.deliver_subject).toMatch(new RegExp(`^${PREFIX}credits-inbox\\.`));
        expect(await count(`SELECT count(*) AS n FROM credits WHERE account = 'acc-9'`)).toBe(1);
      });
    } finally {
      await stopRunners();
      await jsm.streams.delete(`${PREFIX}CREDITS`).catch(() => undefined);
      await nats.close();
    }
  });

  it('"Kafka": a grant published twice with one Idempotency-Key is one row, the second record answered as its duplicate', async () => {
    if (!kafkaBrokerAvailable()) {
      return;
    }
    // The mock cluster has no CreateTopics: the page's consumer does not create topics, so the broker starts with them.
    const broker = await startKafkaBroker({ 'credits.granted': 1, 'credits.granted.DLT': 1 });
    try {
      await scenario(['kafka.bootstrap.ts', 'credits.kafka.controller.ts', 'kafka-publish.ts'], async () => {
        const app = await startRunner('kafka', { KAFKA_BROKER: broker.bootstrap });
        for (let copy = 0; copy < 2; copy++) {
          await run(process.execPath, ['dist/examples/kafka-publish.js'], { cwd: directory, timeout: 30_000, env: { ...process.env, KAFKA_BROKER: broker.bootstrap } });
        }
        await until(async () => app.output().includes("Duplicate of 'grant-7'"), 'the second record is answered as a duplicate', 30_000);
        expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'grant-7'`)).toBe(1);
        expect(await count(`SELECT count(*) AS n FROM credits WHERE account = 'acc-7'`)).toBe(1);
      });
    } finally {
      await stopRunners();
      await broker.stop();
    }
  });

  it('"Amazon SQS": a credit sent twice under one payload id is one row, and both copies are deleted', async () => {
    const fauxqs = await Fauxqs.start();
    try {
      await scenario(['credit-queue.module.ts'], async () => {
        const { url } = await fauxqs.createQueue(`${PREFIX}credits`, 5, 3);
        await startRunner('sqs', { SQS_ENDPOINT: fauxqs.endpoint, CREDITS_QUEUE_URL: url, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' });
        for (let copy = 0; copy < 2; copy++) {
          await fauxqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify({ id: 'guide-sqs-1', account: 'acc-sqs', cents: 300 }) }));
        }
        await until(async () => (await fauxqs.depth(url)) === 0, 'both copies are deleted', 30_000);
        expect(await count(`SELECT count(*) AS n FROM credits WHERE account = 'acc-sqs'`)).toBe(1);
      });
    } finally {
      await stopRunners();
      await fauxqs.stop();
    }
  });

  it('"A BullMQ processor": the producer\'s job and a second job for the same order complete, one capture', async () => {
    if (!(await redisAvailable())) {
      return;
    }
    const connection = createClient({ url: REDIS_URL });
    const queue = new Queue(`${PREFIX}payments`, { connection });
    try {
      await scenario(['payments.processor.ts', 'payments.producer.ts'], async () => {
        await startRunner('bullmq', { REDIS_URL });
        await until(async () => (await queue.getJobCounts('completed')).completed === 2, 'both jobs complete', 30_000);
        expect(await queue.getJobCounts('failed')).toEqual({ failed: 0 });
        expect(await count(`SELECT count(*) AS n FROM payments WHERE id = 'o-42'`)).toBe(1);
      });
    } finally {
      await stopRunners();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      if (connection.isOpen) {
        await connection.close();
      }
    }
  });

  it('"Testing your controllers": the Jest test passes', async () => {
    await scenario(['payments.controller.spec.ts', 'payments.controller.ts'], async () => {
      await run(process.execPath, ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', '--ci'], { cwd: directory, timeout: 120_000 });
    });
  });

  it('"Testing your controllers": the Vitest test passes', async () => {
    await scenario(['payments.controller.vitest.spec.ts', 'payments.controller.ts'], async () => {
      await run(process.execPath, ['node_modules/vitest/vitest.mjs', 'run'], { cwd: directory, timeout: 120_000 });
    });
  });
});
