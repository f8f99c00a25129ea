import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Controller, type ExecutionContext, type INestApplication, Module, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyModule,
  IdempotencyOptionsError,
  IdempotentHandler,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { KEY_EFFECTS_SQL, KEYED_EVENT_SUBJECT, KEYS_GATE, KeysGraphqlModule, KeysModule } from './fixtures/keys.module.js';
import { consumeNats, NATS_URL, natsAvailable } from './support/brokers.js';
import { PLATFORMS, post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/**
 * The Retry-After a twin of an in-flight request to `route` is answered: the first request waits at
 * the fixtures' gate (an advisory lock the test holds) with its claim written, the twin is refused
 * at once (409), then the gate opens and the first commits.
 */
async function retryAfterOfTwin(db: TestDatabase, url: string, key: string, headers: Record<string, string> = { 'Idempotency-Key': key }): Promise<string | null> {
  const gate = await db.connect();
  try {
    await gate.query('SELECT pg_advisory_lock($1)', [KEYS_GATE]);
    const first = post(url, {}, headers);
    await until(
      async () => (await db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).length > 0,
      'the first request waits at the gate',
    );
    const twin = await post(url, {}, headers);
    expect(twin).toMatchObject({ status: 409, body: { type: 'urn:idempotency:in-flight' } });
    await gate.query('SELECT pg_advisory_unlock($1)', [KEYS_GATE]);
    expect((await first).status).toBe(201);
    return twin.headers.get('retry-after');
  } finally {
    await gate.end();
  }
}

/**
 * What users of NestJS's first-party @nestjs/idempotency look for (issue 40), from the user's side:
 * an optional key, the key as a Structured Field string, a class-level decorator, module-level key
 * sources, and clear start-up errors. Runs are rows of `key_effects`, claims rows of processed_messages.
 */
describe.each(PLATFORMS)('keys, on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let counter = 0;
  const newKey = (prefix: string) => `${prefix}-${platform}-${++counter}`;

  const runs = async (handler: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM key_effects WHERE handler = $1', [handler]))[0].n);
  const claims = (consumer: string) =>
    db.query<{ message_id: string; retention: string }>(
      `SELECT message_id, to_char(expires_at - processed_at, 'DD "days"') AS retention FROM processed_messages WHERE consumer = $1 ORDER BY processed_at`,
      [consumer],
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp(platform, db.url, [KeysModule], false, { purge: { interval: false } }));
    await db.query(KEY_EFFECTS_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  describe('an optional key: required: false', () => {
    it('runs the handler as if undecorated for a request without a key, each time, and claims nothing', async () => {
      const first = await post(`${baseUrl}/keys/optional`, {});
      const second = await post(`${baseUrl}/keys/optional`, {});
      expect([first.status, second.status]).toEqual([201, 201]);
      expect([first.body?.key, second.body?.key]).toEqual([null, null]);
      expect(second.headers.get('idempotent-replayed')).toBeNull();
      expect(await runs('optional')).toBe(2);
      expect(await claims('POST /keys/optional')).toEqual([]);
    });

    it('processes a request with a key exactly once and replays it', async () => {
      const key = newKey('optional');
      const first = await post(`${baseUrl}/keys/optional`, {}, { 'Idempotency-Key': key });
      const again = await post(`${baseUrl}/keys/optional`, {}, { 'Idempotency-Key': key });
      expect(first).toMatchObject({ status: 201, body: { key } });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await claims('POST /keys/optional')).map(({ message_id }) => message_id)).toEqual([key]);
    });

    it('still refuses a key that is there but invalid, and a required key that is missing', async () => {
      const empty = await post(`${baseUrl}/keys/optional`, {}, { 'Idempotency-Key': '' });
      expect(empty).toMatchObject({ status: 400, body: { type: 'urn:idempotency:invalid-key', detail: expect.stringContaining('is empty') } });
      const missing = await post(`${baseUrl}/keys/required`, {});
      expect(missing).toMatchObject({ status: 400, body: { type: 'urn:idempotency:invalid-key' } });
      expect(await runs('required')).toBe(0);
    });
  });

  it("answers a twin in flight Retry-After: 1 by default, and the handler's retryAfter where it sets one", async () => {
    expect(await retryAfterOfTwin(db, `${baseUrl}/keys/gated`, newKey('gated'))).toBe('1');
    expect(await retryAfterOfTwin(db, `${baseUrl}/keys/gated-patient`, newKey('patient'))).toBe('5');
  });

  describe('the Idempotency-Key as a Structured Field string', () => {
    it('takes "k" and k as one key, stored bare: the handler runs once and the second is replayed', async () => {
      const key = newKey('sf');
      const quoted = await post(`${baseUrl}/keys/required`, {}, { 'Idempotency-Key': `"${key}"` });
      const bare = await post(`${baseUrl}/keys/required`, {}, { 'Idempotency-Key': key });
      const quotedAgain = await post(`${baseUrl}/keys/required`, {}, { 'Idempotency-Key': `"${key}"` });
      expect(quoted).toMatchObject({ status: 201, body: { key } });
      expect(bare.headers.get('idempotent-replayed')).toBe('true');
      expect(quotedAgain.headers.get('idempotent-replayed')).toBe('true');
      expect(bare.body).toEqual(quoted.body);
      expect((await claims('POST /keys/required')).map(({ message_id }) => message_id)).toContain(key);
      expect((await db.query('SELECT 1 FROM key_effects WHERE key = $1', [key])).length).toBe(1);
    });

    it('undoes the escapes of an sf-string: "a\\"b\\\\c" is the key a"b\\c', async () => {
      const key = newKey('escaped');
      const answer = await post(`${baseUrl}/keys/required`, {}, { 'Idempotency-Key': `"${key}\\"b\\\\c"` });
      expect(answer).toMatchObject({ status: 201, body: { key: `${key}"b\\c` } });
    });

    it.each([
      ['no closing quote', '"sf-open'],
      ['a parameter after it', '"sf-param";v=1'],
      ['an escape of another character', '"sf\\n"'],
    ])('refuses a malformed sf-string (%s) with the 400 invalid-key problem, and claims nothing', async (_case, header) => {
      const before = await claims('POST /keys/required');
      const answer = await post(`${baseUrl}/keys/required`, {}, { 'Idempotency-Key': header });
      expect(answer).toMatchObject({ status: 400, body: { type: 'urn:idempotency:invalid-key', detail: expect.stringContaining('no Structured Field string') } });
      expect(await claims('POST /keys/required')).toEqual(before);
    });
  });

  describe('@IdempotentHandler() on a controller class', () => {
    it('makes its POST, PUT and DELETE routes idempotent, with the class options under the handler options', async () => {
      const key = newKey('class');
      const created = await post(`${baseUrl}/class-level`, {}, { 'Idempotency-Key': key });
      const createdAgain = await post(`${baseUrl}/class-level`, {}, { 'Idempotency-Key': key });
      expect(created.status).toBe(201);
      expect(createdAgain.headers.get('idempotent-replayed')).toBe('true');
      expect(await runs('class-create')).toBe(1);
      expect(await claims('POST /class-level')).toEqual([{ message_id: key, retention: '03 days' }]);

      const update = () =>
        fetch(`${baseUrl}/class-level/7`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ requestId: `${key}-put` }) });
      expect([(await update()).status, (await update()).headers.get('idempotent-replayed')]).toEqual([200, 'true']);
      expect(await runs(`class-update-7-${key}-put`)).toBe(1);
      expect(await claims('PUT /class-level/:id')).toEqual([{ message_id: `${key}-put`, retention: '03 days' }]);

      const remove = () => fetch(`${baseUrl}/class-level/7`, { method: 'DELETE', headers: { 'Idempotency-Key': `${key}-delete` } });
      expect([(await remove()).status, (await remove()).headers.get('idempotent-replayed')]).toEqual([200, 'true']);
      expect(await runs('class-remove')).toBe(1);
    });

    it('leaves its GET routes as they are: no key asked for, nothing claimed', async () => {
      const listed = await fetch(`${baseUrl}/class-level`);
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual({ listed: true });
      expect(await claims('GET /class-level')).toEqual([]);
    });

    it('refuses a class with no route that changes state, when it is declared', () => {
      const declare = () => {
        @Controller('reads')
        @IdempotentHandler()
        class ReadsController {}
        return ReadsController;
      };
      expect(declare).toThrow(IdempotencyOptionsError);
      expect(declare).toThrow(/on the class ReadsController applies to its routes of @Post\(\), @Put\(\), @Patch\(\) or @Delete\(\)/);
    });
  });
});

describe('module-level key sources', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  const runs = async (handler: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM key_effects WHERE handler = $1', [handler]))[0].n);

  /** One GraphQL mutation over HTTP; `key` in the Idempotency-Key header. */
  async function mutate(query: string, key?: string): Promise<{ data?: Record<string, number>; errors?: { extensions: { code: string } }[]; replayed: boolean }> {
    const response = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'Idempotency-Key': key }) },
      body: JSON.stringify({ query }),
    });
    return { ...((await response.json()) as object), replayed: response.headers.get('idempotent-replayed') === 'true' };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [KeysModule, KeysGraphqlModule], false, {
      purge: { interval: false },
      retryAfter: '3s',
      key: {
        http: [{ header: 'X-Request-Id' }, { header: 'Idempotency-Key' }],
        graphql: [{ body: 'idempotencyKey' }, { header: 'Idempotency-Key' }],
      },
    }));
    await db.query(KEY_EFFECTS_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('HTTP handlers that set no key read the module\'s sources in order; a handler\'s own key replaces them', async () => {
    const byRequestId = await post(`${baseUrl}/keys/required`, {}, { 'X-Request-Id': 'rid-1', 'Idempotency-Key': 'ignored-1' });
    const again = await post(`${baseUrl}/keys/required`, {}, { 'X-Request-Id': 'rid-1', 'Idempotency-Key': 'ignored-2' });
    const byHeader = await post(`${baseUrl}/keys/required`, {}, { 'Idempotency-Key': 'idem-1' });
    expect([byRequestId.body?.key, byHeader.body?.key]).toEqual(['rid-1', 'idem-1']);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await runs('required')).toBe(2);

    const none = await post(`${baseUrl}/keys/required`, {});
    expect(none).toMatchObject({ status: 400, body: { detail: expect.stringContaining('the X-Request-Id header or the Idempotency-Key header is missing') } });

    const byBody = await post(`${baseUrl}/keys/by-body`, { id: 'body-1' }, { 'X-Request-Id': 'rid-2' });
    expect(byBody.body?.key).toBe('body-1');
  });

  it("answers a twin in flight with the module's retryAfter, unless the handler sets its own", async () => {
    expect(await retryAfterOfTwin(db, `${baseUrl}/keys/gated`, 'gated-module', { 'X-Request-Id': 'gated-module' })).toBe('3');
    expect(await retryAfterOfTwin(db, `${baseUrl}/keys/gated-patient`, 'patient-module', { 'X-Request-Id': 'patient-module' })).toBe('5');
  });

  it('GraphQL reads an idempotencyKey argument, then the Idempotency-Key header', async () => {
    const byArgument = await mutate('mutation { keyedNote(text: "a", idempotencyKey: "gql-arg-1") }', 'gql-header-1');
    const byArgumentAgain = await mutate('mutation { keyedNote(text: "a", idempotencyKey: "gql-arg-1") }', 'gql-header-2');
    expect(byArgument.errors).toBeUndefined();
    expect(byArgumentAgain).toMatchObject({ replayed: true, data: byArgument.data });
    const byHeader = await mutate('mutation { keyedNote(text: "b") }', '"gql-header-3"');
    const byHeaderAgain = await mutate('mutation { keyedNote(text: "b") }', 'gql-header-3');
    expect(byHeaderAgain).toMatchObject({ replayed: true, data: byHeader.data });
    expect([await runs('note-a'), await runs('note-b')]).toEqual([1, 1]);
    expect(await db.query("SELECT message_id FROM processed_messages WHERE consumer = 'graphql Mutation.keyedNote' ORDER BY processed_at")).toEqual([
      { message_id: 'gql-arg-1' },
      { message_id: 'gql-header-3' },
    ]);
    const none = await mutate('mutation { keyedNote(text: "c") }');
    expect(none.errors?.[0].extensions.code).toBe('IDEMPOTENCY_INVALID_KEY');
    expect(await runs('note-c')).toBe(0);
  });

  it('makes the mutations of a resolver with @IdempotentHandler() on its class idempotent, and leaves its queries as they are', async () => {
    const first = await mutate('mutation { classNote(text: "z") }', 'gql-class-1');
    const again = await mutate('mutation { classNote(text: "z") }', 'gql-class-1');
    expect(first).toMatchObject({ replayed: false, data: { classNote: expect.any(Number) } });
    expect(again).toMatchObject({ replayed: true, data: first.data });
    expect(await runs('class-note-z')).toBe(1);
    expect((await mutate('mutation { classNote(text: "w") }')).errors?.[0].extensions.code).toBe('IDEMPOTENCY_INVALID_KEY');
    const ping = (await (await fetch(`${baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ classPing }' }) })).json()) as object;
    expect(ping).toEqual({ data: { classPing: 'pong' } });
  });

  it('runs a GraphQL mutation with required: false unclaimed without a key, and once with one', async () => {
    await mutate('mutation { optionalNote(text: "x") }');
    await mutate('mutation { optionalNote(text: "x") }');
    expect(await runs('optional-note-x')).toBe(2);
    const keyed = await mutate('mutation { optionalNote(text: "y") }', 'gql-optional-1');
    const keyedAgain = await mutate('mutation { optionalNote(text: "y") }', 'gql-optional-1');
    expect(keyedAgain).toMatchObject({ replayed: true, data: keyed.data });
    expect(await runs('optional-note-y')).toBe(1);
  });
});

const describeWithNats = (await natsAvailable()) ? describe : describe.skip;

describeWithNats("the module's key and scope for message handlers (rpc, over NATS)", () => {
  let db: TestDatabase;
  let app: INestApplication;
  let nats: NatsConnection;

  /** A request to the handler, without a Nats-Msg-Id: its key is the payload's eventId. */
  async function send(data: { eventId: string; tenant: string }): Promise<Record<string, unknown>> {
    const reply = await nats.request(KEYED_EVENT_SUBJECT, JSON.stringify({ pattern: KEYED_EVENT_SUBJECT, data, id: crypto.randomUUID() }), { timeout: 10_000 });
    return reply.json<{ response: Record<string, unknown> }>().response;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    const tenant = (context: ExecutionContext) => context.switchToRpc().getData<{ tenant?: string }>().tenant;
    ({ app } = await startDemoApp('express', db.url, [KeysModule], false, { purge: { interval: false }, key: { rpc: { body: 'eventId' } }, scope: { rpc: tenant } }));
    await db.query(KEY_EFFECTS_SQL);
    await consumeNats(app);
    nats = await connect({ servers: NATS_URL });
  });

  afterAll(async () => {
    await nats?.close();
    await app?.close();
    await db?.drop();
  });

  it("keys a handler that sets none by the module's rpc key, per tenant by its rpc scope: one run per tenant, each redelivery replayed", async () => {
    const acme = await send({ eventId: 'evt-1', tenant: 'acme' });
    const globex = await send({ eventId: 'evt-1', tenant: 'globex' });
    const acmeAgain = await send({ eventId: 'evt-1', tenant: 'acme' });
    expect([acme.key, globex.key]).toEqual(['evt-1', 'evt-1']);
    expect(globex.effect).not.toBe(acme.effect);
    expect(acmeAgain).toEqual(acme);
    expect(await db.query("SELECT key FROM key_effects WHERE handler = 'event' ORDER BY id")).toEqual([{ key: 'evt-1' }, { key: 'evt-1' }]);
  });
});

describe('start-up errors of IdempotencyModule', () => {
  let db: TestDatabase;

  @Controller('plain')
  class PlainController {
    @Post()
    @IdempotentHandler()
    grant() {
      return { granted: true };
    }
  }

  const typeOrm = () =>
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: db.url,
      migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000],
      migrationsRun: true,
    });

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('forRoot() with no argument starts with every default, and its handlers work', async () => {
    @Module({ imports: [typeOrm(), IdempotencyModule.forRoot()], controllers: [PlainController] })
    class DefaultsModule {}
    const moduleRef = await Test.createTestingModule({ imports: [DefaultsModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.listen(0, '127.0.0.1');
      const url = `${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/plain`;
      const first = await post(url, {}, { 'Idempotency-Key': 'defaults-1' });
      const again = await post(url, {}, { 'Idempotency-Key': 'defaults-1' });
      expect(first.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await db.query("SELECT to_char(expires_at - processed_at, 'DD') AS days FROM processed_messages WHERE message_id = 'defaults-1'")).toEqual([{ days: '07' }]);
    } finally {
      await app.close();
    }
  });

  it('a forRootAsync() factory that returns nothing is refused, with the fix', async () => {
    // No data source: the options are refused first, and nothing is left connecting.
    @Module({ imports: [IdempotencyModule.forRootAsync({ useFactory: () => undefined as never })], controllers: [PlainController] })
    class ForgetfulModule {}
    const compile = Test.createTestingModule({ imports: [ForgetfulModule] }).compile();
    await expect(compile).rejects.toThrow(IdempotencyOptionsError);
    await expect(compile).rejects.toThrow(
      'IdempotencyModule was given undefined as its options: its forRootAsync() factory (useFactory, or the create() method of useClass or ' +
        'useExisting) returned no options object. Return the options object: {} for every default.',
    );
  });
});
