import type { INestApplication } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { IDEMPOTENCY_CHANNELS, IdempotencyPurgeService } from 'nestjs-idempotent-consumer';
import { FixtureController, FixtureModule } from './fixtures/fixture.module.js';
import { post, startDemoApp } from './support/demo-app.js';
import { countProcessedMessages, seedProcessedMessages } from './support/processed-messages.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

/** Every message published on the module's channels, by channel. */
const published: Record<keyof typeof IDEMPOTENCY_CHANNELS, Record<string, unknown>[]> = { claim: [], duplicate: [], commit: [], purge: [], rejected: [], leaseLost: [], outbox: [] };
const subscribers = Object.fromEntries(
  Object.keys(IDEMPOTENCY_CHANNELS).map((name) => [name, (message: unknown) => published[name as keyof typeof published].push(message as Record<string, unknown>)]),
);

/** The spans of deliveries to `consumer`, in the order they ended. */
const spansOf = (consumer: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.attributes['idempotency.consumer'] === consumer);
const eventsOf = (span: ReadableSpan) => span.events.map((event) => event.name);

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  for (const [name, channel] of Object.entries(IDEMPOTENCY_CHANNELS)) {
    subscribe(channel, subscribers[name]);
  }
});

afterAll(async () => {
  for (const [name, channel] of Object.entries(IDEMPOTENCY_CHANNELS)) {
    unsubscribe(channel, subscribers[name]);
  }
  trace.disable();
  await provider.shutdown();
});

describe('tracing: one OpenTelemetry span per delivery, and diagnostics-channel events', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [FixtureModule], false, { purge: { interval: false }, metrics: { registry: false } }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  beforeEach(() => {
    exporter.reset();
    Object.values(published).forEach((messages) => messages.splice(0));
  });

  it('a first delivery: claim, handler and commit as events, its outcome and wait as attributes, no key', async () => {
    expect((await post(`${baseUrl}/credits`, { account: 'acc-trace', cents: 100 }, { 'Idempotency-Key': 'trace-1' })).status).toBe(201);
    expect(await countProcessedMessages(db, 'POST /credits')).toBe(1);
    const [span, ...others] = spansOf('POST /credits');
    expect(others).toHaveLength(0);
    expect(span.name).toBe('idempotency POST /credits');
    expect(span.attributes).toMatchObject({
      'idempotency.consumer': 'POST /credits',
      'idempotency.sender': 'default',
      'idempotency.mode': 'transaction',
      'idempotency.outcome': 'processed',
      'idempotency.replayed': false,
      'http.request.method': 'POST',
      'http.response.status_code': 201,
    });
    expect(span.attributes['idempotency.claim.wait_ms']).toBeGreaterThan(0);
    expect(span.attributes['idempotency.key']).toBeUndefined();
    expect(eventsOf(span)).toEqual(['idempotency.claim', 'idempotency.handler', 'idempotency.handler.end', 'idempotency.commit']);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(published.claim).toEqual([{ consumer: 'POST /credits', sender: 'default', mode: 'transaction', waitMs: expect.any(Number) }]);
    expect(published.commit).toEqual([{ consumer: 'POST /credits', sender: 'default', claimToCommitMs: expect.any(Number) }]);
    expect(published.duplicate).toEqual([]);
  });

  it('a duplicate: a replay event and attribute, the recorded status, no handler', async () => {
    const first = await post(`${baseUrl}/credits`, { account: 'acc-trace', cents: 100 }, { 'Idempotency-Key': 'trace-2' });
    exporter.reset();
    const replay = await post(`${baseUrl}/credits`, { account: 'acc-trace', cents: 100 }, { 'Idempotency-Key': 'trace-2' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    const [span] = spansOf('POST /credits');
    expect(span.attributes).toMatchObject({ 'idempotency.outcome': 'duplicate', 'idempotency.replayed': true, 'http.response.status_code': 201 });
    expect(eventsOf(span)).toEqual(['idempotency.replay']);
    expect(published.duplicate).toEqual([{ consumer: 'POST /credits', sender: 'default', waitMs: expect.any(Number) }]);
    // One claim and one commit (the first delivery), none for the replay.
    expect([published.claim.length, published.commit.length]).toEqual([1, 1]);
  });

  it('a failure: the span has status error, the exception, a rollback event, and nothing is committed', async () => {
    app.get(FixtureController).flakyAttempts = 0;
    expect((await post(`${baseUrl}/fixture/flaky`, { account: 'acc-trace-flaky', cents: 5 }, { 'Idempotency-Key': 'trace-flaky' })).status).toBe(500);
    expect(await countProcessedMessages(db, 'POST /fixture/flaky')).toBe(0);
    const [span] = spansOf('POST /fixture/flaky');
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'first delivery fails after writing' });
    expect(span.attributes).toMatchObject({ 'idempotency.outcome': 'failed', 'idempotency.replayed': false, 'error.type': 'Error' });
    expect(eventsOf(span)).toEqual(['idempotency.claim', 'idempotency.handler', 'exception', 'idempotency.rollback']);
    expect(published.commit).toEqual([]);
  });

  it('a delivery without a key: one span, rejected, not an error, and a rejected event', async () => {
    expect((await post(`${baseUrl}/credits`, { account: 'acc-trace', cents: 1 })).status).toBe(400);
    const [span] = spansOf('POST /credits');
    expect(span.attributes).toMatchObject({ 'idempotency.outcome': 'rejected', 'http.response.status_code': 400, 'error.type': 'IdempotencyKeyError' });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(published.rejected).toEqual([{ consumer: 'POST /credits', sender: 'default', code: 'IDEMPOTENCY_INVALID_KEY' }]);
  });

  it('a purge run is published on its channel', async () => {
    await seedProcessedMessages(db, { count: 3, consumer: 'trace-purge', expired: true });
    await app.get(IdempotencyPurgeService).purgeNow();
    expect(await countProcessedMessages(db, 'trace-purge')).toBe(0);
    expect(published.purge).toEqual([{ outcome: 'purged', rows: 3, batches: 1, durationMs: expect.any(Number) }]);
  });
});

describe('tracing with recordKey: the key on the span and in the channel messages', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('fastify', db.url, [], false, {
      purge: { interval: false },
      metrics: { registry: false },
      tracing: { recordKey: true },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('records the key when the option allows it', async () => {
    exporter.reset();
    Object.values(published).forEach((messages) => messages.splice(0));
    expect((await post(`${baseUrl}/credits`, { account: 'acc-key', cents: 7 }, { 'Idempotency-Key': 'visible-key' })).status).toBe(201);
    expect((await post(`${baseUrl}/credits`, { account: 'acc-key', cents: 7 }, { 'Idempotency-Key': 'visible-key' })).status).toBe(201);
    const spans = spansOf('POST /credits');
    expect(spans.map((span) => [span.attributes['idempotency.outcome'], span.attributes['idempotency.key']])).toEqual([
      ['processed', 'visible-key'],
      ['duplicate', 'visible-key'],
    ]);
    expect([published.claim[0]?.key, published.commit[0]?.key, published.duplicate[0]?.key]).toEqual(['visible-key', 'visible-key', 'visible-key']);
  });
});
