import { jest } from '@jest/globals';
import type { Logger } from '@nestjs/common';
import type { Verdict } from '../message-transport.js';
import { type KafkaDelivery, KafkaSettlement } from './kafka-message.js';

/** A record whose consumer and producer only write down what the settlement asked of them. */
function delivered(offset: string, value: unknown = { id: 'g-1' }, failSend = false) {
  const calls: string[] = [];
  const delivery: KafkaDelivery = {
    getMessage: () => ({ offset, key: null, value, headers: { 'Idempotency-Key': 'g-1', attempt: { n: 1 } } }),
    getPartition: () => 2,
    getTopic: () => 'credits',
    getConsumer: () => ({
      commitOffsets: async (offsets) => void calls.push(`commit ${JSON.stringify(offsets)}`),
      seek: (position) => void calls.push(`seek ${JSON.stringify(position)}`),
      pause: (topics) => void calls.push(`pause ${JSON.stringify(topics)}`),
      resume: (topics) => void calls.push(`resume ${JSON.stringify(topics)}`),
    }),
    getProducer: () => ({
      send: async (record) => {
        if (failSend) {
          throw new Error('broker away');
        }
        calls.push(`send ${JSON.stringify(record)}`);
      },
    }),
  };
  return { calls, delivery };
}

const logger = { error() {}, warn() {} } as unknown as Logger;
const retry = (maxAttempts: number): Verdict => ({ kind: 'retry', attemptKey: 'k', maxAttempts, retryDelayMs: 1_000, consumer: 'credits', key: 'g-1', reason: 'boom' });
const paused = 'pause [{"topic":"credits","partitions":[2]}]';
const sought = (offset: string) => `seek {"topic":"credits","partition":2,"offset":"${offset}"}`;
const committed = (offset: string) => `commit [{"topic":"credits","partition":2,"offset":"${offset}"}]`;

describe('KafkaSettlement', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('commits the offset after the record once it is acked, past 2^53 too', async () => {
    const { calls, delivery } = delivered('9007199254740993');
    await new KafkaSettlement(logger).settle(delivery, 'g-1', { kind: 'ack' });
    expect(calls).toEqual([committed('9007199254740994')]);
  });

  it('with kafkaOffsets, writes the position before the commit unless the claim wrote it, and commits nothing when it cannot write it', async () => {
    const written: string[] = [];
    const settlement = new KafkaSettlement(logger, { write: async (delivery) => void written.push(delivery.getMessage().offset) });
    const duplicate = delivered('3');
    await settlement.settle(duplicate.delivery, 'g-1', { kind: 'ack' });
    expect([written, duplicate.calls]).toEqual([['3'], [committed('4')]]);
    const claimed = delivered('4');
    await settlement.settle(claimed.delivery, 'g-1', { kind: 'ack' }, true);
    expect([written, claimed.calls]).toEqual([['3'], [committed('5')]]);
    const away = delivered('5');
    await new KafkaSettlement(logger, { write: () => Promise.reject(new Error('database away')) }).settle(away.delivery, 'g-1', { kind: 'ack' });
    expect(away.calls).toEqual([]);
  });

  it('pauses the partition and seeks back to a failed record, resuming it after retryDelay doubled with each failure; then dead-letters and commits', async () => {
    const settlement = new KafkaSettlement(logger);
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 2; attempt++) {
      const { calls, delivery } = delivered('41');
      await settlement.settle(delivery, 'g-1', retry(3));
      expect(calls).toEqual([paused, sought('41')]);
      const before = Date.now();
      await jest.advanceTimersToNextTimerAsync();
      delays.push(Date.now() - before);
      expect(calls.at(-1)).toBe('resume [{"topic":"credits","partitions":[2]}]');
    }
    expect(delays).toEqual([1_000, 2_000]);
    const { calls, delivery } = delivered('41');
    await settlement.settle(delivery, 'g-1', retry(3));
    expect(calls).toEqual([
      'send {"topic":"credits.DLT","messages":[{"key":null,"value":"{\\"id\\":\\"g-1\\"}","headers":{"Idempotency-Key":"g-1","attempt":"{\\"n\\":1}"}}]}',
      committed('42'),
    ]);
  });

  it('dead-letters at once what can never succeed, the value as Nest decoded it encoded again', async () => {
    const { calls, delivery } = delivered('7', 'plain text');
    await new KafkaSettlement(logger).settle(delivery, undefined, { kind: 'dead-letter', consumer: 'credits', key: undefined, reason: 'no key' });
    expect(calls[0]).toContain('"value":"plain text"');
    expect(calls.slice(1)).toEqual([committed('8')]);
  });

  it('reads the record again a second later, committing nothing, when its dead letter cannot be produced', async () => {
    const { calls, delivery } = delivered('7', { id: 'g-1' }, true);
    await new KafkaSettlement(logger).settle(delivery, 'g-1', { kind: 'dead-letter', consumer: 'credits', key: 'g-1', reason: 'reused' });
    expect(calls).toEqual([paused, sought('7')]);
    jest.advanceTimersByTime(999);
    expect(calls).toHaveLength(2);
    jest.advanceTimersByTime(1);
    expect(calls).toHaveLength(3);
  });

  it('dead-letters at its next failure a record whose dead letter could not be produced, without further attempts', async () => {
    const settlement = new KafkaSettlement(logger);
    await settlement.settle(delivered('5').delivery, 'g-1', retry(2));
    await settlement.settle(delivered('5', { id: 'g-1' }, true).delivery, 'g-1', retry(2));
    const { calls, delivery } = delivered('5');
    await settlement.settle(delivery, 'g-1', retry(2));
    expect(calls[0]).toMatch(/^send \{"topic":"credits\.DLT"/);
    expect(calls.slice(1)).toEqual([committed('6')]);
  });
});
