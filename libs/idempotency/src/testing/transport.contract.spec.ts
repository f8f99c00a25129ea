import { type ContractConsumer, type ContractMessage, type TransportHarness, transportContract } from './transport.contract.js';

type Flaw = 'runs-every-copy' | 'redelivery-runs-twice' | 'poison-commits' | 'keyless-runs';

/**
 * A transport and its store in memory, right by the contract unless it has a flaw: each
 * published message is settled at once, as its consumer would; a message published while the
 * handler is blocked waits for the next consumer; a message published while the store is away
 * fails once and is processed when the outage has lasted.
 */
function memoryHarness(flaw?: Flaw): TransportHarness {
  const effects = new Map<string, number>();
  const claims = new Map<string, number>();
  const dead = new Map<string, number>();
  let logs: string[] = [];
  let blocked = false;
  let held: string | undefined;
  let cutUrl: string | undefined;
  const commit = (key: string, times = 1) => {
    effects.set(key, (effects.get(key) ?? 0) + times);
    claims.set(key, 1);
  };
  const consumer = (databaseUrl: string | undefined): ContractConsumer => {
    logs = [];
    cutUrl = databaseUrl;
    if (held !== undefined && !blocked) {
      commit(held, flaw === 'redelivery-runs-twice' ? 2 : 1);
      held = undefined;
    }
    const lines = logs;
    return { logs: () => lines, stop: () => Promise.resolve(), kill: () => Promise.resolve() };
  };
  return {
    start: async ({ databaseUrl } = {}) => consumer(databaseUrl),
    async publish({ key }: ContractMessage) {
      if (blocked) {
        held = key;
      } else if (cutUrl !== undefined) {
        logs.push(`WARN memory message '${key}' failed and is retried`);
        setTimeout(() => commit(key), 2_100);
      } else {
        commit(key);
      }
    },
    async publishCopies({ key }, copies) {
      commit(key, flaw === 'runs-every-copy' ? copies : 1);
      logs.push(...Array.from({ length: copies - 1 }, () => `LOG Duplicate of '${key}' acknowledged`));
    },
    async publishPoison({ key }) {
      logs.push(`WARN memory message '${key}' failed (attempt 1 of 2)`, `ERROR memory message '${key}' failed 2 times`);
      if (flaw === 'poison-commits') {
        commit(key);
      }
      dead.set(key, 1);
    },
    async publishWithoutKey({ key }) {
      logs.push('ERROR memory message has no key: the memory id is missing');
      if (flaw === 'keyless-runs') {
        commit(key);
      }
      dead.set(key, 1);
    },
    effects: async ({ key }) => effects.get(key) ?? 0,
    async block() {
      blocked = true;
      return async () => {
        blocked = false;
      };
    },
    drained: async () => held === undefined,
    deadLettered: async ({ key }) => dead.get(key) ?? 0,
    async query<T>(sql: string, params: unknown[] = []) {
      const n = sql.includes('pg_stat_activity')
        ? Number(blocked && held !== undefined)
        : sql.includes('message_id')
          ? (claims.get(params[0] as string) ?? 0)
          : [...claims.values()].reduce((sum, each) => sum + each, 0);
      return [{ n: String(n) }] as T[];
    },
    databaseUrl: 'postgres://127.0.0.1:9/memory',
    poisonAttempts: 2,
    missingKey: 'the memory id is missing',
  };
}

describe('transportContract', () => {
  it('passes a transport that keeps it', async () => {
    for (const check of transportContract(memoryHarness())) {
      await check.run();
    }
  });

  it.each([
    ['runs-every-copy', 'one message published 50 times'],
    ['redelivery-runs-twice', 'a consumer killed (SIGKILL) mid-handler'],
    ['poison-commits', 'a poison message'],
    ['keyless-runs', 'a message without its key'],
  ] as const)('fails a transport whose flaw is %s, in its check of %s', async (flaw, failing) => {
    const check = transportContract(memoryHarness(flaw)).find(({ name }) => name.startsWith(failing))!;
    await expect(check.run()).rejects.toThrow();
  });
});
