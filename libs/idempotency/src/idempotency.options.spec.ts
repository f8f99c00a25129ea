import { randomBytes } from 'node:crypto';
import { IdempotencyOptionsError } from './errors/idempotency.errors.js';
import { resolveModuleOptions } from './idempotency.options.js';
import { PgPoolDataLayer } from './data-layers/pg/pg-pool.data-layer.js';
import { TypeOrmDataLayer } from './data-layers/typeorm/typeorm.data-layer.js';

describe('resolveModuleOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveModuleOptions()).toEqual({
      dataLayer: new TypeOrmDataLayer(),
      tableName: 'processed_messages',
      retentionMs: 7 * 86_400_000,
      retryAfterSeconds: 1,
      inFlightWaitTimeoutMs: 30_000,
      connectionTimeoutMs: 5_000,
      senderHorizonsMs: {},
      replay: {
        maxBodyBytes: 16_777_216,
        excludedHeaders: new Set(['set-cookie', 'date', 'connection', 'keep-alive', 'transfer-encoding']),
      },
      purge: { intervalMs: 60_000, batchSize: 5000 },
      outbox: null,
      kafkaOffsets: false,
      health: {
        maxPurgeLagMs: 3_600_000,
        maxTimeSincePurgeMs: 600_000,
        maxDuplicateRate: 0.5,
        duplicateRateWindowMs: 300_000,
        duplicateRateMinDeliveries: 20,
        maxEstimatedRows: null,
        maxOutboxLagMs: 300_000,
        maxOutboxDeadLetters: 0,
      },
      stores: {},
      store: 'postgres',
      warnOnUnusedConsumers: true,
      knownConsumers: new Set(),
      record: 'response',
      recordErrors: new Set(),
      keyring: null,
      key: {},
      scope: {},
      metrics: { registry: undefined, storeSampleIntervalMs: 60_000 },
      tracing: { spans: true, recordKey: false },
      replayCache: { maxEntries: 10_000, maxBytes: 16_777_216, maxAgeMs: 60_000 },
    });
  });

  it('takes encryption keys as Buffers or base64 (standard or URL-safe), and the current key id', () => {
    const raw = randomBytes(32);
    const { keyring } = resolveModuleOptions({
      encryption: { keys: { '2025-06': raw, '2025-12': raw.toString('base64'), 'k:3': raw.toString('base64url') }, current: '2025-12' },
    });
    expect(keyring?.current).toBe('2025-12');
    expect([...(keyring?.keys.keys() ?? [])]).toEqual(['2025-06', '2025-12', 'k:3']);
    for (const key of keyring?.keys.values() ?? []) {
      expect(key.export().equals(raw)).toBe(true);
    }
  });

  it('keeps a record policy that is given', () => {
    expect(resolveModuleOptions({ record: 'status' }).record).toBe('status');
  });

  it('turns the replay cache off with false, and sizes it through its resolver', () => {
    expect(resolveModuleOptions({ replayCache: false }).replayCache).toBeNull();
    expect(resolveModuleOptions({ replayCache: { maxEntries: 5 } }).replayCache).toEqual({ maxEntries: 5, maxBytes: 16_777_216, maxAgeMs: 60_000 });
    expect(() => resolveModuleOptions({ replayCache: { maxBytes: -1 } })).toThrow(IdempotencyOptionsError);
  });

  it('resolves the tracing and store-sampling options, and refuses malformed ones', () => {
    expect(resolveModuleOptions({ tracing: false }).tracing).toEqual({ spans: false, recordKey: false });
    expect(resolveModuleOptions({ tracing: { recordKey: true } }).tracing).toEqual({ spans: true, recordKey: true });
    expect(resolveModuleOptions({ metrics: { storeSampleInterval: false } }).metrics.storeSampleIntervalMs).toBeNull();
    expect(resolveModuleOptions({ metrics: { storeSampleInterval: '30s' } }).metrics.storeSampleIntervalMs).toBe(30_000);
    expect(() => resolveModuleOptions({ tracing: { recordKey: 'yes' as never } })).toThrow(IdempotencyOptionsError);
    expect(() => resolveModuleOptions({ tracing: true as never })).toThrow(/tracing must be an object/);
    expect(() => resolveModuleOptions({ metrics: { storeSampleInterval: 'soon' as never } })).toThrow(IdempotencyOptionsError);
  });

  it('keeps what is given', () => {
    expect(
      resolveModuleOptions({ dataSource: 'billing', tableName: 'seen_ids', retention: '72h', inFlightWaitTimeout: '5s' }),
    ).toMatchObject({ tableName: 'seen_ids', retentionMs: 259_200_000, inFlightWaitTimeoutMs: 5_000 });
  });

  it('takes the data layer: TypeORM on the default data source unless given, dataSource as its shorthand, never both', () => {
    expect(resolveModuleOptions({}).dataLayer).toEqual(new TypeOrmDataLayer());
    expect(resolveModuleOptions({ dataSource: 'billing' }).dataLayer).toEqual(new TypeOrmDataLayer({ dataSource: 'billing' }));
    const pool = new PgPoolDataLayer({ pool: 'PG_POOL' });
    expect(resolveModuleOptions({ dataLayer: pool }).dataLayer).toBe(pool);
    expect(() => resolveModuleOptions({ dataLayer: pool, dataSource: 'billing' })).toThrow(/dataSource .* or dataLayer, not both/);
  });

  it('takes any object with the members of IdempotencyDataLayer, and names the first one a layer lacks', () => {
    const layer = { name: 'knex', attach() {}, start: async () => {}, query: async () => ({ rows: [], rowCount: 0 }), connect: async () => undefined as never, schemaAdvice: 'sql-files' } as const;
    expect(resolveModuleOptions({ dataLayer: layer }).dataLayer).toBe(layer);
    expect(() => resolveModuleOptions({ dataLayer: { name: 'mine' } as never })).toThrow(
      "dataLayer must be an IdempotencyDataLayer (new TypeOrmDataLayer(...), new PgPoolDataLayer(...), new MikroOrmDataLayer(...) or one of yours), but the value given ([object Object]) has no attach().",
    );
    class HalfLayer {
      readonly name = 'half';
      attach() {}
      start() {}
      query() {}
      connect() {}
    }
    expect(() => resolveModuleOptions({ dataLayer: new HalfLayer() as never })).toThrow("but the HalfLayer given has no schemaAdvice ('typeorm-migrations' or 'sql-files').");
    expect(() => resolveModuleOptions({ dataLayer: { ...layer, connect: 'yes' } as never })).toThrow('has no connect().');
    expect(() => resolveModuleOptions({ dataLayer: 'pg' as never })).toThrow('but the value given (pg) has no name (a string).');
    expect(() => resolveModuleOptions({ dataSource: '' })).toThrow(IdempotencyOptionsError);
  });

  it('keeps the senders, purge and health options that are given', () => {
    const resolved = resolveModuleOptions({
      senders: { payments: { redeliveryHorizon: '3d' }, shop: { redeliveryHorizon: '4h' } },
      purge: { interval: '30s', batchSize: 1000 },
      health: {
        maxPurgeLag: '2h',
        maxTimeSincePurge: '5m',
        maxDuplicateRate: 0.05,
        duplicateRateWindow: '1m',
        duplicateRateMinDeliveries: 100,
        maxEstimatedRows: 50_000_000,
      },
    });
    expect(resolved.senderHorizonsMs).toEqual({ payments: 259_200_000, shop: 14_400_000 });
    expect(resolved.purge).toEqual({ intervalMs: 30_000, batchSize: 1000 });
    expect(resolved.health).toEqual({
      maxPurgeLagMs: 7_200_000,
      maxTimeSincePurgeMs: 300_000,
      maxDuplicateRate: 0.05,
      duplicateRateWindowMs: 60_000,
      duplicateRateMinDeliveries: 100,
      maxEstimatedRows: 50_000_000,
      maxOutboxLagMs: 300_000,
      maxOutboxDeadLetters: 0,
    });
  });

  it('adds the headers to exclude from replays to those never recorded, in lower case', () => {
    const { replay } = resolveModuleOptions({ replay: { maxBodyBytes: 4096, excludeHeaders: ['X-Request-Id'] } });
    expect(replay.maxBodyBytes).toBe(4096);
    expect([...replay.excludedHeaders]).toEqual(expect.arrayContaining(['set-cookie', 'x-request-id']));
  });

  it('with the purge timer off, does not check the time since the last purge', () => {
    const resolved = resolveModuleOptions({ purge: { interval: false }, health: { maxTimeSincePurge: '1s' } });
    expect(resolved.purge.intervalMs).toBeNull();
    expect(resolved.health.maxTimeSincePurgeMs).toBeNull();
  });

  it.each([
    [{ tableName: 'processed-messages' }, /tableName must be a plain PostgreSQL identifier/],
    [{ tableName: 'x; drop table y' }, /tableName must be a plain PostgreSQL identifier/],
    [{ tableName: 'a'.repeat(57) }, /of at most 56 characters/],
    [{ dataSource: '' }, /dataSource must be a data source name/],
    [{ retention: '7 days' }, /retention must be a duration/],
    [{ inFlightWaitTimeout: '0s' }, /inFlightWaitTimeout must be a duration/],
    [{ inFlightWaitTimeout: '25d' }, /inFlightWaitTimeout must be at most '24d'/],
    [{ connectionTimeout: '100d' }, /connectionTimeout must be at most '24d'/],
    [{ purge: { interval: '30d' } }, /purge\.interval must be at most '24d'/],
    [{ retention: '40000d' }, /retention must be at most '36500d'/],
    [{ replay: { maxBodyBytes: 0 } }, /replay\.maxBodyBytes must be a whole number of bytes from 1 to 67108864/],
    [{ replay: { excludeHeaders: 'x-request-id' } }, /replay\.excludeHeaders must be a list of header names/],
    [{ metrics: { registry: {} } }, /metrics\.registry must be a prom-client Registry/],
    [{ stores: { redis: {} } }, /stores\.redis must be a lease store/],
    [{ stores: { postgres: {} } }, /stores\.postgres is the built-in store/],
    [{ senders: { payments: {} } }, /senders\.payments\.redeliveryHorizon must be a duration/],
    [{ senders: ['payments'] }, /senders must map sender names to \{ redeliveryHorizon \}/],
    [{ knownConsumers: 'settle-day' }, /knownConsumers must list consumer names/],
    [{ knownConsumers: [''] }, /knownConsumers must list consumer names \(non-empty texts\)/],
    [{ purge: { interval: 'often' } }, /purge\.interval must be a duration/],
    [{ purge: { batchSize: 0 } }, /purge\.batchSize must be a whole number from 1 to 100000/],
    [{ purge: { batchSize: 2.5 } }, /purge\.batchSize must be a whole number/],
    [{ health: { maxDuplicateRate: 5 } }, /health\.maxDuplicateRate must be a share from 0 to 1/],
    [{ health: { duplicateRateMinDeliveries: 0 } }, /health\.duplicateRateMinDeliveries must be a whole number above 0/],
    [{ health: { maxEstimatedRows: -1 } }, /health\.maxEstimatedRows must be a whole number above 0/],
    [{ health: { maxOutboxDeadLetters: -1 } }, /health\.maxOutboxDeadLetters must be a whole number, 0 or more; got -1/],
    [{ outbox: { publishers: {} } }, /outbox\.publishers names no publisher/],
    [{ outbox: { publishers: { rabbitmq: {} } } }, /outbox\.publishers\.rabbitmq has no publish\(message\) method/],
    [{ outbox: { publishers: { rabbitmq: { publish: async () => undefined } }, relay: { listen: 'yes' } } }, /outbox\.relay\.listen must be true or false; got "yes"/],
    [{ outbox: { publishers: { rabbitmq: { publish: async () => undefined } }, relay: { deadLetterHoldsKey: 0 } } }, /outbox\.relay\.deadLetterHoldsKey must be true or false; got 0/],
    [{ outbox: { publishers: { rabbitmq: { publish: async () => undefined } }, relay: { concurrency: 1.5 } } }, /outbox\.relay\.concurrency must be a whole number from 1 to 10000; got 1\.5/],
    [{ outbox: { publishers: { rabbitmq: { publish: async () => undefined } }, relay: { autoStart: 'no' } } }, /outbox\.relay\.autoStart must be true or false; got "no"/],
    [{ outbox: { publishers: { rabbitmq: { publish: async () => undefined } }, relay: { batchSize: 0 } } }, /outbox\.relay\.batchSize must be a whole number from 1 to 10000; got 0/],
    [{ outbox: { publishers: { rabbitmq: { publish: async () => undefined } }, relay: { retryDelay: '1m', maxRetryDelay: '1s' } } }, /outbox\.relay\.maxRetryDelay \(1000 ms\) is shorter than outbox\.relay\.retryDelay \(60000 ms\)/],
    [
      { purge: { interval: '2h' } },
      /health\.maxPurgeLag \(1h\) must be longer than purge\.interval \(2h\).*raise health\.maxPurgeLag or shorten purge\.interval/,
    ],
    [{ purge: { interval: '10m' }, health: { maxPurgeLag: '1h' } }, /health\.maxTimeSincePurge \(10m\) must be longer than purge\.interval \(10m\)/],
    [{ record: 'body' }, /record must be one of 'response', 'status'; got "body"/],
    [{ recordErrors: [402, 503] }, /^recordErrors lists 503, a server error: a 5xx usually says the server failed, and a retry may succeed, so no handler records one by default/],
    [{ recordErrors: [302] }, /^recordErrors must be a list of error statuses, from 400 to 599 \(a 5xx on a handler only\), e.g. \[402, 403\]; got \[302\]\./],
    [{ recordErrors: 402 }, /^recordErrors must be a list of error statuses/],
    [{ recordErrors: ['402'] }, /^recordErrors must be a list of error statuses/],
    [{ encryption: { current: 'k1' } }, /encryption must be \{ keys: \{ <keyId>: <32-byte key> \}, current: <keyId> \}/],
    [{ encryption: { keys: {}, current: 'k1' } }, /encryption\.keys is empty/],
    [{ encryption: { keys: { k1: randomBytes(32) }, current: 'k2' } }, /encryption\.current is "k2", which is not a key id of encryption\.keys \('k1'\)/],
    [{ encryption: { keys: { k1: randomBytes(32) } } }, /encryption\.current is undefined/],
    [{ encryption: { keys: { k1: randomBytes(16) }, current: 'k1' } }, /encryption\.keys\.k1 must be a 256-bit AES key: .*; got 16 bytes\./],
    [{ encryption: { keys: { k1: randomBytes(24).toString('base64') }, current: 'k1' } }, /encryption\.keys\.k1 must be a 256-bit AES key.*got 24 bytes/],
    [{ encryption: { keys: { k1: 'my secret passphrase!' }, current: 'k1' } }, /encryption\.keys\.k1 .*got a string of 21 characters that is not base64/],
    [{ encryption: { keys: { k1: undefined }, current: 'k1' } }, /encryption\.keys\.k1 .*got undefined/],
    [{ encryption: { keys: { 'key one': randomBytes(32) }, current: 'key one' } }, /encryption\.keys has the key id "key one"; a key id is 1 to 64/],
  ])('refuses %p with a message that says how to fix it', (options, reason) => {
    expect(() => resolveModuleOptions(options as never)).toThrow(IdempotencyOptionsError);
    expect(() => resolveModuleOptions(options as never)).toThrow(reason);
  });
});
