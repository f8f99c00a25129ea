import type { INestApplication } from '@nestjs/common';
import { Mutation, Query, Resolver } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import { IdempotencyOptionsError, IdempotencyUnsupportedHandlerError, IdempotentHandler } from 'nestjs-idempotent-consumer';
import { resolve } from 'node:path';
import type pg from 'pg';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { CreditFaults, GraphqlAppModule } from './apps/graphql/graphql-app.module.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { postJson } from './support/post-json.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const GRAPHQL_APP = resolve('dist/test-apps/test/apps/graphql/graphql-app.main.js');

type Mutation = 'grantCredit' | 'grantCreditWaiting' | 'grantCreditByRequestId';
interface CreditInput {
  account: string;
  cents: number;
  requestId?: string;
}
interface GraphqlError {
  message: string;
  extensions: Record<string, unknown>;
}
interface GraphqlAnswer {
  status: number;
  replayed: boolean;
  data: Record<string, unknown> | null | undefined;
  errors: GraphqlError[] | undefined;
}

/** One mutation over HTTP, as a client sends it: the input as a variable, the key in a header. */
async function mutate(baseUrl: string, mutation: Mutation, input: CreditInput, key?: string): Promise<GraphqlAnswer> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'Idempotency-Key': key }) },
    body: JSON.stringify({
      query: `mutation Grant($input: GrantCreditInput!) { ${mutation}(input: $input) { entryId account cents balance grantedAt } }`,
      variables: { input },
    }),
  });
  const body = (await response.json()) as { data?: Record<string, unknown> | null; errors?: GraphqlError[] };
  return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', data: body.data, errors: body.errors };
}

interface RawAnswer {
  replayed: boolean;
  /** The response body as the client received it. */
  text: string;
  body: { data?: Record<string, unknown> | null; errors?: GraphqlError[] };
}

/** Any operation over HTTP, its body kept as sent. */
async function operate(baseUrl: string, query: string, variables: Record<string, unknown>, key: string): Promise<RawAnswer> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  return { replayed: response.headers.get('idempotent-replayed') === 'true', text, body: JSON.parse(text) as RawAnswer['body'] };
}

/** Every field of a payment: custom scalars (Cents, BigInt, Timestamp under the schema's name `paid_at`), nested lists, an interface list. */
const PAYMENT_FIELDS = `
  ... on Payment {
    entryId amount paid_at
    lines { label amount }
    parties { __typename name ... on Person { age } ... on Company { vat_id } }
  }
  ... on Declined { reason }`;

describe('exactly-once GraphQL mutations (Apollo on Express)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let counter = 0;
  const newKey = () => `gql-key-${++counter}-${Date.now()}`;
  const newAccount = () => `acc-gql-${++counter}`;

  const ledgerCount = async (account: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]))[0].n);
  const balanceOf = async (account: string) =>
    Number((await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]))[0]?.balance ?? 0);
  const claimsOf = (key: string) => db.query<{ consumer: string }>('SELECT consumer FROM processed_messages WHERE message_id = $1', [key]);
  const blockedOnLock = async (n: number) =>
    Number(
      (await db.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n,
    ) >= n;

  /** Holds the account's row lock in a transaction of the test's own, so a credit to it blocks mid-resolver, its claim written but not committed. */
  async function lockAccount(account: string): Promise<pg.Client> {
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT balance FROM accounts WHERE account = $1 FOR UPDATE', [account]);
    return holder;
  }
  async function release(holder: pg.Client): Promise<void> {
    await holder.query('ROLLBACK');
    await holder.end();
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [GraphqlAppModule]));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('processes a key sent five times once, replays the first result with Idempotent-Replayed, and claims it as the mutation', async () => {
    const key = newKey();
    const account = newAccount();
    const answers: GraphqlAnswer[] = [];
    for (let i = 0; i < 5; i++) {
      answers.push(await mutate(baseUrl, 'grantCredit', { account, cents: 500 }, key));
    }
    const [first, ...replays] = answers;
    expect(first).toMatchObject({ status: 200, replayed: false, data: { grantCredit: { account, cents: 500, balance: 500 } }, errors: undefined });
    for (const replay of replays) {
      expect(replay).toEqual({ ...first, replayed: true });
    }
    expect(await ledgerCount(account)).toBe(1);
    expect(await balanceOf(account)).toBe(500);
    expect(await claimsOf(key)).toEqual([{ consumer: 'graphql Mutation.grantCredit' }]);
  });

  it('runs a mutation called twice under aliases with one key once, answering both; with other arguments the second is refused', async () => {
    const aliased = async (key: string, x: CreditInput, y: CreditInput) => {
      const response = await fetch(`${baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify({
          query:
            'mutation Twice($x: GrantCreditInput!, $y: GrantCreditInput!) { ' +
            'a: grantCredit(input: $x) { entryId account cents balance } b: grantCredit(input: $y) { entryId account cents balance } }',
          variables: { x, y },
        }),
      });
      return (await response.json()) as { data?: Record<string, unknown> | null; errors?: (GraphqlError & { path?: string[] })[] };
    };
    const account = newAccount();
    const same = await aliased(newKey(), { account, cents: 40 }, { account, cents: 40 });
    expect(same.errors).toBeUndefined();
    expect(same.data?.a).toMatchObject({ account, cents: 40, balance: 40 });
    expect(same.data?.b).toEqual(same.data?.a);
    expect(await ledgerCount(account)).toBe(1);

    const other = newAccount();
    const reused = await aliased(newKey(), { account: other, cents: 40 }, { account: other, cents: 41 });
    expect(reused.errors).toEqual([expect.objectContaining({ path: ['b'], extensions: expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REUSED' }) })]);
    expect(await ledgerCount(other)).toBe(1);
  });

  it("settles 50 concurrent duplicates to one effect ('reject', the default: replays or IDEMPOTENCY_IN_FLIGHT)", async () => {
    const key = newKey();
    const account = newAccount();
    const answers = await Promise.all(Array.from({ length: 50 }, () => mutate(baseUrl, 'grantCredit', { account, cents: 700 }, key)));
    const firsts = answers.filter((answer) => answer.data?.grantCredit && !answer.replayed);
    const replays = answers.filter((answer) => answer.data?.grantCredit && answer.replayed);
    const conflicts = answers.filter((answer) => answer.errors?.[0].extensions.code === 'IDEMPOTENCY_IN_FLIGHT');
    expect(firsts).toHaveLength(1);
    expect(firsts[0].data).toMatchObject({ grantCredit: { account, cents: 700, balance: 700 } });
    expect(firsts.length + replays.length + conflicts.length).toBe(50);
    for (const replay of replays) {
      expect(replay.data).toEqual(firsts[0].data);
    }
    for (const conflict of conflicts) {
      expect(conflict.errors).toHaveLength(1);
      expect(conflict.errors![0].extensions).toMatchObject({ type: 'urn:idempotency:in-flight', status: 409, retryAfter: 1 });
      expect(conflict.data).toBeNull();
    }
    expect(await ledgerCount(account)).toBe(1);
    expect(await balanceOf(account)).toBe(700);
  });

  it("settles 50 concurrent duplicates to one effect ('wait': all 50 answer the same result)", async () => {
    const key = newKey();
    const account = newAccount();
    const answers = await Promise.all(Array.from({ length: 50 }, () => mutate(baseUrl, 'grantCreditWaiting', { account, cents: 300 }, key)));
    expect(answers.map((answer) => answer.errors)).toEqual(Array(50).fill(undefined));
    expect(new Set(answers.map((answer) => JSON.stringify(answer.data))).size).toBe(1);
    expect(answers[0].data).toMatchObject({ grantCreditWaiting: { account, cents: 300, balance: 300 } });
    expect(answers.filter((answer) => !answer.replayed)).toHaveLength(1);
    expect(await ledgerCount(account)).toBe(1);
    expect(await balanceOf(account)).toBe(300);
  });

  it('answers a twin in flight IDEMPOTENCY_IN_FLIGHT, and replays once the first commits', async () => {
    const account = newAccount();
    await mutate(baseUrl, 'grantCredit', { account, cents: 1 }, newKey());
    const holder = await lockAccount(account);
    const key = newKey();
    const first = mutate(baseUrl, 'grantCredit', { account, cents: 10 }, key);
    await until(() => blockedOnLock(1), 'the first mutation waits on the account lock inside its claim');
    const twin = await mutate(baseUrl, 'grantCredit', { account, cents: 10 }, key);
    expect(twin.data).toBeNull();
    expect(twin.errors).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'IDEMPOTENCY_IN_FLIGHT', type: 'urn:idempotency:in-flight', status: 409, retryAfter: 1 }) }),
    ]);
    await release(holder);
    expect((await first).data).toMatchObject({ grantCredit: { balance: 11 } });
    const retry = await mutate(baseUrl, 'grantCredit', { account, cents: 10 }, key);
    expect(retry).toMatchObject({ replayed: true, data: (await first).data });
    expect(await ledgerCount(account)).toBe(2);
  });

  it('refuses a mutation without an Idempotency-Key (IDEMPOTENCY_INVALID_KEY) and writes nothing', async () => {
    const account = newAccount();
    const answer = await mutate(baseUrl, 'grantCredit', { account, cents: 5 });
    expect(answer.data).toBeNull();
    expect(answer.errors).toHaveLength(1);
    expect(answer.errors![0].message).toMatch(/Idempotency-Key header/);
    expect(answer.errors![0].extensions).toMatchObject({ code: 'IDEMPOTENCY_INVALID_KEY', type: 'urn:idempotency:invalid-key', status: 400 });
    expect(answer.errors![0].extensions.retryAfter).toBeUndefined();
    expect(await ledgerCount(account)).toBe(0);
  });

  it('refuses an Idempotency-Key header sent twice (IDEMPOTENCY_INVALID_KEY), as over HTTP, and claims nothing', async () => {
    const account = newAccount();
    const [first, second] = [newKey(), newKey()];
    // Two header lines, as fetch cannot send them (it joins them into one).
    const { json } = await postJson(
      `${baseUrl}/graphql`,
      { query: `mutation { grantCredit(input: { cents: 7, account: "${account}" }) { balance } }` },
      { 'Idempotency-Key': [first, second] },
    );
    const answer = json as { data: unknown; errors: GraphqlError[] };
    expect(answer.data).toBeNull();
    expect(answer.errors[0].message).toBe(
      'The idempotency key (the Idempotency-Key header) came 2 times in one request; it takes exactly one value ' +
        '(as the IETF Idempotency-Key draft defines): send the header once.',
    );
    expect(answer.errors[0].extensions).toMatchObject({ code: 'IDEMPOTENCY_INVALID_KEY', status: 400 });
    expect(await claimsOf(first)).toEqual([]);
    expect(await claimsOf(second)).toEqual([]);
    expect(await claimsOf(`${first}, ${second}`)).toEqual([]);
    expect(await ledgerCount(account)).toBe(0);
  });

  it('refuses a key reused with other arguments (IDEMPOTENCY_KEY_REUSED) and keeps the first effect alone', async () => {
    const key = newKey();
    const account = newAccount();
    expect((await mutate(baseUrl, 'grantCredit', { account, cents: 40 }, key)).data).toMatchObject({ grantCredit: { balance: 40 } });
    const reused = await mutate(baseUrl, 'grantCredit', { account, cents: 41 }, key);
    expect(reused.data).toBeNull();
    expect(reused.errors![0].extensions).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', type: 'urn:idempotency:key-reused', status: 422 });
    // The same arguments in another order of their fields are the same arguments.
    const reordered = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ query: `mutation { grantCredit(input: { cents: 40, account: "${account}" }) { balance } }` }),
    });
    expect(reordered.headers.get('idempotent-replayed')).toBe('true');
    expect(await reordered.json()).toEqual({ data: { grantCredit: { balance: 40 } } });
    expect(await ledgerCount(account)).toBe(1);
    expect(await balanceOf(account)).toBe(40);
  });

  it('reads the key from an argument (key: { body: "input.requestId" }), with no header needed', async () => {
    const account = newAccount();
    const requestId = newKey();
    const first = await mutate(baseUrl, 'grantCreditByRequestId', { account, cents: 60, requestId });
    const again = await mutate(baseUrl, 'grantCreditByRequestId', { account, cents: 60, requestId });
    expect(first).toMatchObject({ replayed: false, data: { grantCreditByRequestId: { account, cents: 60, balance: 60 } } });
    expect(again).toEqual({ ...first, replayed: true });
    expect(await claimsOf(requestId)).toEqual([{ consumer: 'graphql Mutation.grantCreditByRequestId' }]);

    const missing = await mutate(baseUrl, 'grantCreditByRequestId', { account, cents: 60 });
    expect(missing.errors![0].extensions).toMatchObject({ code: 'IDEMPOTENCY_INVALID_KEY', status: 400 });
    expect(missing.errors![0].message).toMatch(/'input.requestId'/);
    expect(await ledgerCount(account)).toBe(1);
  });

  it('a resolver that throws leaves neither claim nor work behind; the retry processes', async () => {
    app.get(CreditFaults).failNext = 1;
    const key = newKey();
    const account = newAccount();
    const failed = await mutate(baseUrl, 'grantCredit', { account, cents: 250 }, key);
    expect(failed.data).toBeNull();
    expect(failed.errors![0]).toMatchObject({ message: 'the credit failed after its writes', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    expect(await claimsOf(key)).toEqual([]);
    expect(await ledgerCount(account)).toBe(0);
    expect(await balanceOf(account)).toBe(0);

    const retried = await mutate(baseUrl, 'grantCredit', { account, cents: 250 }, key);
    expect(retried).toMatchObject({ replayed: false, data: { grantCredit: { balance: 250 } }, errors: undefined });
    expect(await claimsOf(key)).toHaveLength(1);
    expect(await ledgerCount(account)).toBe(1);
  });

  describe('replays what the client first received, byte for byte', () => {
    const payQuery = `mutation Pay($input: PayInput!) { pay(input: $input) { __typename ${PAYMENT_FIELDS} } }`;

    it('custom scalars (Cents, BigInt, a Timestamp field named paid_at), nested lists and an interface, under a union', async () => {
      const key = newKey();
      const account = newAccount();
      const first = await operate(baseUrl, payQuery, { input: { account, cents: 1234 } }, key);
      expect(first.body.errors).toBeUndefined();
      const [{ id, created_at }] = await db.query<{ id: string; created_at: Date }>('SELECT id, created_at FROM ledger_entries WHERE account = $1', [account]);
      expect(first.body.data).toEqual({
        pay: {
          __typename: 'Payment',
          entryId: `${id}0000000000`,
          amount: '12.34',
          paid_at: created_at.getTime(),
          lines: [[{ label: 'net', amount: '11.34' }, { label: 'fee', amount: '1.00' }], [], [{ label: 'total', amount: '12.34' }]],
          parties: [
            { __typename: 'Person', name: 'Ada', age: 36 },
            { __typename: 'Company', name: 'Acme', vat_id: 'FR-1' },
          ],
        },
      });
      for (let i = 0; i < 3; i++) {
        const replay = await operate(baseUrl, payQuery, { input: { account, cents: 1234 } }, key);
        expect(replay.replayed).toBe(true);
        expect(replay.text).toBe(first.text);
      }
      expect(await ledgerCount(account)).toBe(1);
      expect(await balanceOf(account)).toBe(1234);
    });

    it("the union's other member", async () => {
      const key = newKey();
      const account = newAccount();
      const first = await operate(baseUrl, payQuery, { input: { account, cents: 0 } }, key);
      expect(first.body).toEqual({ data: { pay: { __typename: 'Declined', reason: 'nothing to pay: 0' } } });
      const replay = await operate(baseUrl, payQuery, { input: { account, cents: 0 } }, key);
      expect(replay.text).toBe(first.text);
    });

    it('an interface returned by the mutation', async () => {
      const key = newKey();
      const account = newAccount();
      const query = `mutation Pay($input: PayInput!) { payAsCompany(input: $input) { __typename name ... on Company { vat_id } } }`;
      const first = await operate(baseUrl, query, { input: { account, cents: 99 } }, key);
      expect(first.body).toEqual({ data: { payAsCompany: { __typename: 'Company', name: account, vat_id: 'VAT-99' } } });
      const replay = await operate(baseUrl, query, { input: { account, cents: 99 } }, key);
      expect(replay).toMatchObject({ replayed: true, text: first.text });
      expect(await ledgerCount(account)).toBe(1);
    });

    it('the mutation and its fields under aliases, asked again with other aliases', async () => {
      const key = newKey();
      const account = newAccount();
      const aliased = (name: string) =>
        `mutation Pay($input: PayInput!) { ${name}: pay(input: $input) { ... on Payment { id: entryId total: amount at: paid_at lines { what: label amount } } } }`;
      const first = await operate(baseUrl, aliased('charged'), { input: { account, cents: 500 } }, key);
      expect(first.body.errors).toBeUndefined();
      expect(first.body.data!.charged).toMatchObject({ total: '5.00', lines: [[{ what: 'net', amount: '4.00' }, { what: 'fee', amount: '1.00' }], [], [{ what: 'total', amount: '5.00' }]] });
      const replay = await operate(baseUrl, aliased('charged'), { input: { account, cents: 500 } }, key);
      expect(replay).toMatchObject({ replayed: true, text: first.text });
      const otherAlias = await operate(baseUrl, aliased('again'), { input: { account, cents: 500 } }, key);
      expect(otherAlias.replayed).toBe(true);
      expect(otherAlias.body.data).toEqual({ again: first.body.data!.charged });
      expect(await ledgerCount(account)).toBe(1);
    });
  });

  describe('on a pool of two connections', () => {
    let small: INestApplication;
    let smallUrl: string;

    beforeAll(async () => {
      ({ app: small, baseUrl: smallUrl } = await startDemoApp('express', db.url, [GraphqlAppModule], false, { connectionTimeout: '300ms' }, 2));
    });

    afterAll(async () => {
      await small?.close();
    });

    it('answers a mutation that gets no connection IDEMPOTENCY_UNAVAILABLE with retryAfter, and claims nothing', async () => {
      const account = newAccount();
      await mutate(smallUrl, 'grantCredit', { account, cents: 1 }, newKey());
      const holder = await lockAccount(account);
      const holders = [newKey(), newKey()].map((key) => mutate(smallUrl, 'grantCredit', { account, cents: 2 }, key));
      await until(() => blockedOnLock(2), 'both connections of the pool wait on the account lock');
      const key = newKey();
      const starved = await mutate(smallUrl, 'grantCredit', { account, cents: 3 }, key);
      expect(starved.data).toBeNull();
      expect(starved.errors![0].extensions).toMatchObject({ code: 'IDEMPOTENCY_UNAVAILABLE', type: 'urn:idempotency:unavailable', status: 503, retryAfter: 1 });
      await release(holder);
      expect((await Promise.all(holders)).map((answer) => answer.errors)).toEqual([undefined, undefined]);
      expect(await claimsOf(key)).toEqual([]);
      expect(await balanceOf(account)).toBe(5);
    });
  });

  it('a process killed with SIGKILL while the resolver holds its transaction leaves nothing; the retry processes once', async () => {
    const processes: DemoProcess[] = [];
    try {
      const account = newAccount();
      const first = await startAppProcess(GRAPHQL_APP, { DATABASE_URL: db.url }, '/graphql?query=%7Bping%7D');
      processes.push(first);
      expect((await mutate(first.baseUrl, 'grantCredit', { account, cents: 100 }, newKey())).data).toMatchObject({ grantCredit: { balance: 100 } });

      const holder = await lockAccount(account);
      const key = newKey();
      const inFlightFails = expect(mutate(first.baseUrl, 'grantCredit', { account, cents: 55 }, key)).rejects.toThrow('fetch failed');
      await until(() => blockedOnLock(1), 'the resolver waits on the account lock inside its claim transaction');
      await first.kill('SIGKILL');
      expect(first.child.signalCode).toBe('SIGKILL');
      await inFlightFails;
      await release(holder);
      expect(await claimsOf(key)).toEqual([]);
      expect(await db.query('SELECT 1 FROM ledger_entries WHERE account = $1 AND cents = 55', [account])).toEqual([]);

      // The client retries on a fresh process; in flight only while the dead process's backend is still unwinding.
      const second = await startAppProcess(GRAPHQL_APP, { DATABASE_URL: db.url }, '/graphql?query=%7Bping%7D');
      processes.push(second);
      let retried = await mutate(second.baseUrl, 'grantCredit', { account, cents: 55 }, key);
      await until(async () => {
        if (retried.errors?.[0].extensions.code !== 'IDEMPOTENCY_IN_FLIGHT') return true;
        retried = await mutate(second.baseUrl, 'grantCredit', { account, cents: 55 }, key);
        return false;
      }, 'the retry is no longer answered as in flight');
      expect(retried).toMatchObject({ replayed: false, data: { grantCredit: { account, cents: 55, balance: 155 } }, errors: undefined });
      const duplicate = await mutate(second.baseUrl, 'grantCredit', { account, cents: 55 }, key);
      expect(duplicate).toEqual({ ...retried, replayed: true });
      expect(await db.query('SELECT cents FROM ledger_entries WHERE account = $1 ORDER BY id', [account])).toEqual([{ cents: 100 }, { cents: 55 }]);
      expect(await balanceOf(account)).toBe(155);
    } finally {
      await Promise.all(processes.map((process) => process.kill()));
    }
  });

  describe('refuses to start with a resolver it cannot replay', () => {
    @Resolver()
    class BalanceResolver {
      @Query(() => String)
      @IdempotentHandler()
      balance(): string {
        return '0';
      }
    }

    @Resolver()
    class StatusOnlyResolver {
      @Mutation(() => String)
      @IdempotentHandler({ record: 'status' })
      touch(): string {
        return 'done';
      }
    }

    @Resolver()
    class PlainResolver {
      @Mutation(() => String)
      @IdempotentHandler()
      touch(): string {
        return 'done';
      }
    }

    const start = async (resolver: new () => unknown, idempotency: { record?: 'status' } = {}) => {
      const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url, idempotency })], providers: [resolver] }).compile();
      const refused = moduleRef.createNestApplication({ logger: false });
      try {
        await refused.init();
      } finally {
        await refused.close();
      }
    };

    it('a query, naming it', async () => {
      const error = await start(BalanceResolver).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(IdempotencyUnsupportedHandlerError);
      expect(error).toMatchObject({ handler: 'BalanceResolver.balance' });
      expect((error as Error).message).toMatch(/^BalanceResolver.balance has @IdempotentHandler\(\) on a GraphQL query: only a @Mutation\(\)/);
    });

    it("a mutation that records its status alone (record: 'status')", async () => {
      const error = await start(StatusOnlyResolver).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(IdempotencyOptionsError);
      expect((error as Error).message).toMatch(/^StatusOnlyResolver.touch is a GraphQL mutation with record: 'status'/);
    });

    it("a mutation under the module's record: 'status', naming the module option", async () => {
      const error = await start(PlainResolver, { record: 'status' }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(IdempotencyOptionsError);
      expect((error as Error).message).toBe(
        "IdempotencyModule's record: 'status' applies to PlainResolver.touch, a GraphQL mutation, which then keeps no result to give its duplicates: " +
          "set record: 'response' in its @IdempotentHandler() (a mutation's result is recorded and replayed), or remove record: 'status' from the module's options.",
      );
    });
  });
});
