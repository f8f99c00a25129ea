import { deepStrictEqual, ok, rejects, strictEqual } from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OutboxPublisher, OutgoingMessage, PublishAttempt } from 'nestjs-idempotent-consumer';

/** What the relay tells a message's first publish, with a timeout longer than any check here waits. */
export const firstAttempt = (): PublishAttempt => ({ attempt: 1, lastError: undefined, timeoutMs: 10_000, signal: new AbortController().signal });

/** One message as the broker holds it, read as this module's consumer of that transport reads it. */
export interface HeldMessage {
  /** The key the consumer reads by default (or by the header the publisher documents, where it has no default). */
  readonly key: string | undefined;
  /** The payload, parsed. */
  readonly payload: unknown;
  /** The headers the consumer sees (the broker's own among them). */
  readonly headers: Readonly<Record<string, string>>;
  /** The pattern the consumer sees; undefined where there is none. */
  readonly pattern: string | undefined;
}

/** What the contract needs of one broker and its publisher. */
export interface PublisherHarness {
  /** The publisher under test, talking to the real broker. */
  publisher(): OutboxPublisher;
  /** A new address of the broker (a queue, a subject) that no other check uses, which `held` can read. */
  address(): Promise<string>;
  /** Every message the broker holds at `address`, in the order it holds them. */
  held(address: string): Promise<HeldMessage[]>;
  /** Whether its messages carry a pattern, and headers. */
  readonly carries: { readonly pattern: boolean; readonly headers: boolean };
  /** What the broker does with a second message of an id it holds: drops it, or keeps both (the consumer drops the second). */
  readonly repeatedId: 'dropped' | 'kept';
  /** What makes a message one the broker cannot route or accept (a queue that does not exist, say): it changes the contract's message. */
  unacceptable(): Promise<Partial<OutgoingMessage>>;
  /** A publisher whose broker cannot be reached, the address to publish to, and what a publish does: rejects, or never resolves. */
  unreachable(): Promise<{ readonly publisher: OutboxPublisher; readonly address: string; readonly outcome: 'rejects' | 'never resolves' }>;
}

/** One check of the contract: a name for the test runner, and the check, which throws when the publisher breaks it. */
export interface PublisherCheck {
  readonly name: string;
  readonly run: () => Promise<void>;
}

/** How long a publish to an unreachable broker is watched; the relay bounds its publishes the same way. */
const UNREACHABLE_WATCH_MS = 4_000;

/**
 * What every outbox publisher must do against its real broker: a publish resolves once the broker
 * holds the message, with the id where the consumer reads its key; a repeated id is dropped or
 * kept as the broker does; what the broker cannot route or accept rejects; a broker that cannot be
 * reached never makes a publish resolve. Adding a publisher means writing its harness:
 *
 * ```ts
 * for (const check of publisherContract(harness)) {
 *   it(check.name, check.run);
 * }
 * ```
 */
export function publisherContract(harness: PublisherHarness): PublisherCheck[] {
  const message = async (overrides: Partial<OutgoingMessage> = {}): Promise<OutgoingMessage> => ({
    id: `outbox-${randomUUID()}`,
    address: await harness.address(),
    pattern: harness.carries.pattern ? 'orders.created' : undefined,
    headers: harness.carries.headers ? { 'x-trace-id': 'trace-7', 'x-tenant': 'tenant-9' } : {},
    payload: JSON.stringify({ order: 7, note: 'café ☕', lines: [{ sku: 'a-1', quantity: 2 }] }),
    orderingKey: undefined,
    ...overrides,
  });
  const accepted = (sent: OutgoingMessage) => strictEqual(harness.publisher().refuse?.(sent), undefined, 'refuse() accepts the contract message');
  const matches = (held: HeldMessage, sent: OutgoingMessage) => {
    strictEqual(held.key, sent.id, 'the key the consumer reads is the message id');
    deepStrictEqual(held.payload, JSON.parse(sent.payload));
    for (const [name, value] of Object.entries(sent.headers)) {
      strictEqual(held.headers[name], value, `header ${name}`);
    }
    if (harness.carries.pattern) {
      strictEqual(held.pattern, sent.pattern);
    }
  };

  return [
    {
      name: 'a publish resolves once the broker holds exactly that message: its id where the consumer reads the key, its payload, headers and pattern',
      run: async () => {
        const sent = await message();
        accepted(sent);
        await harness.publisher().publish(sent, firstAttempt());
        const held = await harness.held(sent.address);
        strictEqual(held.length, 1);
        matches(held[0], sent);
      },
    },
    {
      name: 'the same id published twice: the broker drops the second, or keeps both with the same key, as the harness says it does',
      run: async () => {
        const sent = await message();
        await harness.publisher().publish(sent, firstAttempt());
        await harness.publisher().publish(sent, firstAttempt());
        const held = await harness.held(sent.address);
        strictEqual(held.length, harness.repeatedId === 'dropped' ? 1 : 2, `the broker holds ${held.length}`);
        held.forEach((copy) => matches(copy, sent));
      },
    },
    {
      name: 'a message the broker cannot route or accept makes the publish reject',
      run: async () => {
        const sent = await message(await harness.unacceptable());
        await rejects(harness.publisher().publish(sent, firstAttempt()));
      },
    },
    {
      name: `a broker that cannot be reached never makes a publish resolve (watched for ${UNREACHABLE_WATCH_MS} ms)`,
      run: async () => {
        const { publisher, address, outcome } = await harness.unreachable();
        try {
          const publishing = publisher.publish(await message({ address }), firstAttempt()).then(
            () => 'resolved' as const,
            () => 'rejects' as const,
          );
          const seen = await Promise.race([publishing, sleep(UNREACHABLE_WATCH_MS).then(() => 'never resolves' as const)]);
          ok(seen !== 'resolved', 'a publish to an unreachable broker resolved');
          strictEqual(seen, outcome);
        } finally {
          const closing = publisher.close?.() ?? Promise.resolve();
          strictEqual(await Promise.race([closing.then(() => 'closed'), sleep(5_000).then(() => 'still closing')]), 'closed');
        }
      },
    },
  ];
}
