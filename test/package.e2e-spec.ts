import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { post } from './support/demo-app.js';
import { startAppProcess, type DemoProcess } from './support/demo-process.js';
import { installed, packLibrary, run, scratchApp as makeScratchApp } from './support/scratch-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** A Nest 12 service of a new user: an orders controller, made idempotent. */
const APP_SOURCE = `
import 'reflect-metadata';
import { Body, Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CreateProcessedMessagesFunctions1796256000000, CreateProcessedMessagesTable1764633600000, IdempotencyContext, UpgradeProcessedMessagesTable1796342400000, IdempotencyModule, IdempotentHandler } from 'nestjs-idempotent-consumer';

@Controller('orders')
class OrdersController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post()
  @IdempotentHandler()
  async place(@Body() order: { item: string }) {
    const [{ id }] = await this.idempotency.manager.query<{ id: number }[]>('INSERT INTO orders (item) VALUES ($1) RETURNING id', [order.item]);
    return { id, item: order.item };
  }
}

// The store under a table name of the service's own: each of the library's migrations subclassed.
class CreateOrderClaimsTable1796256000001 extends CreateProcessedMessagesTable1764633600000 {
  constructor() {
    super('order_claims');
  }
}
class CreateOrderClaimsFunctions1796256000002 extends CreateProcessedMessagesFunctions1796256000000 {
  constructor() {
    super('order_claims');
  }
}
class UpgradeOrderClaims1796342400001 extends UpgradeProcessedMessagesTable1796342400000 {
  constructor() {
    super('order_claims');
  }
}

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, migrations: [CreateOrderClaimsTable1796256000001, CreateOrderClaimsFunctions1796256000002, UpgradeOrderClaims1796342400001], migrationsRun: true }),
    IdempotencyModule.forRoot({ tableName: 'order_claims', purge: { interval: false } }),
  ],
  controllers: [OrdersController],
})
class AppModule {}

const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
await app.listen(Number(process.env.PORT), '127.0.0.1');
`;

/** A user's unit test setup, without @nestjs/testing: the testing entry's module as it would be imported. */
const TESTING_ENTRY_SOURCE = `
import { IdempotencyTestingModule, leaseStoreContract } from 'nestjs-idempotent-consumer/testing';

const module = IdempotencyTestingModule.forRoot({ key: 'k-1' });
console.log(JSON.stringify({ module: module.module.name, global: module.global, providers: module.providers?.length, contract: typeof leaseStoreContract }));
`;

/** Both entry points, as a service still on `moduleResolution: node10` imports them (it reads no `exports` map). */
const BOTH_ENTRIES_SOURCE = `
import { IdempotencyModule, type IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';
import { IdempotencyTestingModule, type IdempotencyTestingOptions } from 'nestjs-idempotent-consumer/testing';

const options: IdempotencyModuleOptions = { retention: '7d' };
const testing: IdempotencyTestingOptions = { key: 'k-1' };
export const modules = [IdempotencyModule.forRoot(options), IdempotencyTestingModule.forRoot(testing)];
`;

/** What tsc says of `file` under `moduleResolution: node10` (CommonJS), the package installed beside it. */
function node10Diagnostics(directory: string, file: string): string[] {
  const program = ts.createProgram([join(directory, 'src', file)], {
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    ignoreDeprecations: '6.0',
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
    typeRoots: [join(directory, 'node_modules', '@types')],
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, ' '));
}

/** The public API: every name the package's entry points export, as the guide and the API reference document them. */
const PUBLIC_NAMES = {
  'nestjs-idempotent-consumer': [
    'AdminActionCounts', 'AdminForgetOptions', 'AdminForgetResult', 'AdminKeyQuery', 'AdminKeyRecord', 'AdminKeyState', 'AdminListOptions',
    'AdminLookupOptions', 'AdminOutboxActionOptions', 'AdminOutboxListOptions', 'AdminOutboxLookupOptions', 'AdminOutboxMessage', 'AdminReleaseOptions', 'AdminUnreadableResponse', 'BullMqPublisher', 'BullMqPublisherOptions',
    'ClaimConnection', 'Claimant', 'CreateKafkaOffsetsTable1796515200000', 'CreateOutboxMessagesTable1796428800000', 'CreateOutboxMessagesTableMariaDb1796688000000', 'CreateProcessedMessagesFunctions1796256000000', 'CreateProcessedMessagesTable1764633600000', 'CreateProcessedMessagesTableMariaDb1796601600000',
    'DEFAULT_OUTBOX_TABLE_NAME', 'DEFAULT_TABLE_NAME', 'DataLayerHost', 'DeliveryCounts', 'DeliveryOutcome', 'Duration', 'EncryptionOptions', 'HealthOptions',
    'IDEMPOTENCY_CHANNELS', 'IDEMPOTENCY_KEY_HEADER', 'IDEMPOTENT_REPLAYED_HEADER', 'IdempotencyAdmin', 'IdempotencyAdminError',
    'IdempotencyAdminModule', 'IdempotencyAdminModuleOptions', 'IdempotencyClaimTransactionError', 'IdempotencyCommitRefusedError', 'IdempotencyConsumerConflictError',
    'IdempotencyContext', 'IdempotencyContextError', 'IdempotencyDataLayer', 'IdempotencyError', 'IdempotencyHealthIndicator',
    'IdempotencyHealthResult', 'IdempotencyInFlightError', 'IdempotencyInterceptor', 'IdempotencyKeyError', 'IdempotencyKeyReusedError',
    'IdempotencyLeaseLostError', 'IdempotencyMetricsService', 'IdempotencyMetricsSnapshot', 'IdempotencyMode', 'IdempotencyModule',
    'IdempotencyModuleOptions', 'IdempotencyOptionsError', 'IdempotencyOutboxError', 'IdempotencyPublishRefusedError', 'IdempotencyPurgeError', 'IdempotencyPurgeService',
    'IdempotencyRecordUnreadableError', 'IdempotencyResponseTooLargeError', 'IdempotencyRetentionError', 'IdempotencySchemaError',
    'IdempotencyTransactionAbortedError', 'IdempotencyTransientError', 'IdempotencyUnavailableError', 'IdempotencyUnsupportedHandlerError',
    'IdempotentHandler', 'IdempotentHandlerOptions', 'IdempotentRunOptions', 'IdempotentRunner', 'InFlightPolicy', 'IsolationLevel',
    'JetStreamPublisher', 'JetStreamPublisherOptions', 'JetStreamPublishing', 'KafkaProducing', 'KafkaPublisher', 'KafkaPublisherOptions', 'KeyEntry', 'KeySource', 'LeaseAttempt', 'LeaseCounts', 'LeaseEvent', 'LeaseKey',
    'LeaseRenewalCounts', 'LeaseRenewalOutcome', 'LeaseRequest', 'LeaseStore', 'MAX_KEY_LENGTH', 'MariaDbPool', 'MariaDbPoolDataLayer', 'MariaDbPoolDataLayerOptions', 'MetricsOptions', 'MetricsRegistry',
    'MikroOrmDataLayer', 'MikroOrmDataLayerOptions', 'Mysql2Pool', 'Mysql2PoolDataLayer', 'Mysql2PoolDataLayerOptions', 'Outbox', 'OutboxAdmin', 'OutboxCounts', 'OutboxMessage', 'OutboxOptions', 'OutboxPublishOptions',
    'OutboxPublisher', 'OutboxRelay', 'OutboxRelayOptions', 'OutboxRelayRun', 'OutboxRelayStats', 'OutboxSample', 'OutgoingMessage', 'PgPoolDataLayer', 'PgPoolDataLayerOptions', 'ProcessedMessage',
    'PublishAttempt', 'PurgeFigures', 'PurgeOptions', 'PurgeOutcome', 'PurgeRun', 'QueryResult', 'RabbitMqPublisher', 'RabbitMqPublisherOptions', 'RecordPolicy', 'RecordedResponse',
    'RedisEvalClient', 'RedisLeaseStore', 'RefusalCounts', 'RemovableEntry', 'ReplayCacheOptions', 'ReplayOptions', 'SchemaMigrationSql',
    'ScopeFunction', 'ScopeSource', 'SenderDuplicateRate', 'SenderOptions', 'SqsPublisher', 'SqsPublisherOptions', 'SqsSending', 'StatementResult', 'StoreSample', 'StoredLeaseEntry',
    'TracingOptions', 'TransactionStatements', 'TypeOrmDataLayer', 'TypeOrmDataLayerOptions', 'UnreadableReason',
    'UpgradeProcessedMessagesTable1796342400000', 'mariaDbOutboxSql', 'mariaDbSchemaSql', 'schemaSql',
  ],
  'nestjs-idempotent-consumer/testing': [
    'ContractCheck', 'ContractConsumer', 'ContractExtras', 'ContractMessage', 'ContractStart', 'DataLayerContractModule', 'DataLayerContractOptions',
    'DataLayerHarness', 'DataLayerService', 'DataLayerStart', 'DataLayerWriter', 'IdempotencyTestingModule', 'IdempotencyTestingOptions', 'NestedEnding',
    'TestingOutbox', 'TransportHarness', 'dataLayerContract', 'leaseStoreContract', 'transportContract',
  ],
};

/** The names each entry point's published types export, read by TypeScript from the package installed in `directory`. */
function publishedNames(directory: string): Record<string, string[]> {
  const entries = { 'nestjs-idempotent-consumer': 'dist/index.d.ts', 'nestjs-idempotent-consumer/testing': 'dist/testing/index.d.ts' };
  const files = Object.values(entries).map((file) => join(directory, 'node_modules', 'nestjs-idempotent-consumer', file));
  const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noEmit: true });
  const checker = program.getTypeChecker();
  return Object.fromEntries(
    Object.keys(entries).map((entry, i) => {
      const module = checker.getSymbolAtLocation(program.getSourceFile(files[i]) as ts.SourceFile) as ts.Symbol;
      return [entry, checker.getExportsOfModule(module).map((symbol) => symbol.name).sort()];
    }),
  );
}

/** The published declaration files of the package installed in `directory` that still hold a symbol tagged `@internal`. */
async function declarationsWithInternals(directory: string): Promise<string[]> {
  const dist = join(directory, 'node_modules', 'nestjs-idempotent-consumer', 'dist');
  const declarations = (await readdir(dist, { recursive: true })).filter((file) => file.endsWith('.d.ts'));
  expect(declarations).toContain('index.d.ts');
  const tagged = await Promise.all(declarations.map(async (file) => ((await readFile(join(dist, file), 'utf8')).includes('@internal') ? file : undefined)));
  return tagged.filter((file) => file !== undefined);
}

/**
 * The library as a user gets it: `npm pack`ed, installed from the tarball into Nest 12 apps made
 * in a temporary folder outside the repository, compiled with tsc and started on PostgreSQL.
 */
describe('the package, installed from its tarball into a new Nest 12 service', () => {
  let db: TestDatabase;
  let folder: string;
  let tarball: string;
  const apps: DemoProcess[] = [];

  /** Makes a scratch app with `dependencies`, installs it from the npm registry (or its cache), and compiles it. */
  const scratchApp = (name: string, dependencies: Record<string, string>) =>
    makeScratchApp(folder, name, tarball, dependencies, { 'main.ts': APP_SOURCE, 'testing-entry.ts': TESTING_ENTRY_SOURCE, 'both-entries.ts': BOTH_ENTRIES_SOURCE });

  /** `nestjs-idempotent-consumer/testing` resolves, for tsc (it compiled; and under `moduleResolution: node10`) and for Node. */
  async function provesTestingEntry(directory: string): Promise<void> {
    const { stdout } = await run(process.execPath, [join(directory, 'dist', 'testing-entry.js')], { cwd: directory });
    expect(JSON.parse(stdout)).toEqual({ module: 'IdempotencyTestingModule', global: true, providers: 5, contract: 'function' });
    expect(node10Diagnostics(directory, 'both-entries.ts')).toEqual([]);
  }

  async function provesReplay(directory: string): Promise<void> {
    const app = await startAppProcess(join(directory, 'dist', 'main.js'), { DATABASE_URL: db.url }, '/orders/ready-probe');
    apps.push(app);
    const first = await post(`${app.baseUrl}/orders`, { item: `${directory}-book` }, { 'Idempotency-Key': directory });
    const again = await post(`${app.baseUrl}/orders`, { item: `${directory}-book` }, { 'Idempotency-Key': directory });
    expect(first).toMatchObject({ status: 201, body: { item: `${directory}-book` } });
    expect(again).toMatchObject({ status: 201, body: first.body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await db.query('SELECT count(*)::int AS n FROM orders WHERE item = $1', [`${directory}-book`])).toEqual([{ n: 1 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM order_claims WHERE message_id = $1', [directory])).toEqual([{ n: 1 }]);
    await app.kill();
  }

  const core = () => ({
    '@nestjs/common': installed('@nestjs/common'),
    '@nestjs/core': installed('@nestjs/core'),
    '@nestjs/platform-express': installed('@nestjs/platform-express'),
    '@nestjs/typeorm': installed('@nestjs/typeorm'),
    pg: installed('pg'),
    'reflect-metadata': installed('reflect-metadata'),
    rxjs: installed('rxjs'),
    typeorm: installed('typeorm'),
    '@types/node': installed('@types/node'),
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query('CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)');
    folder = await mkdtemp(join(tmpdir(), 'idempotency-package-'));
    const packed = await packLibrary(folder);
    tarball = packed.tarball;
    console.log(`npm pack: ${packed.size} bytes, ${packed.files.length} files: ${packed.files.filter((file) => !file.startsWith('dist/')).join(', ')} and dist/`);
    // The README's links lead to the guide, the operations guide and the changelog: they ship beside it.
    expect(packed.files).toEqual(
      expect.arrayContaining(['LICENSE', 'README.md', 'CHANGELOG.md', 'docs/guide.md', 'docs/operations.md', 'package.json', 'dist/index.js', 'dist/index.d.ts']),
    );
    expect(packed.files.some((file) => file.includes('.spec.'))).toBe(false);
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.kill('SIGKILL')));
    await db?.drop();
    await rm(folder, { recursive: true, force: true });
  });

  it('a service with the microservices, terminus and prom-client packages compiles, starts and replays a redelivery', async () => {
    const directory = await scratchApp('full-service', {
      ...core(),
      '@nestjs/microservices': installed('@nestjs/microservices'),
      '@nestjs/terminus': installed('@nestjs/terminus'),
      'prom-client': installed('prom-client'),
    });
    await provesReplay(directory);
    await provesTestingEntry(directory);
    // Its types compiled with the service (skipLibCheck off): they show the public API and nothing else.
    expect(publishedNames(directory)).toEqual(PUBLIC_NAMES);
    expect(await declarationsWithInternals(directory)).toEqual([]);
  });

  it('an HTTP-only service without @nestjs/microservices, @nestjs/schedule, @nestjs/terminus and prom-client compiles, starts and replays', async () => {
    const directory = await scratchApp('http-only-service', core());
    for (const absent of ['@nestjs/microservices', '@nestjs/schedule', '@nestjs/terminus', 'prom-client']) {
      expect(existsSync(join(directory, 'node_modules', absent))).toBe(false);
    }
    await provesReplay(directory);
    await provesTestingEntry(directory);
  });
});
