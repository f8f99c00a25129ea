import type { ModulesContainer } from '@nestjs/core';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Subject } from 'rxjs';
import type { ActiveClaim } from '../../context/idempotency.context.js';
import type { ResolvedIdempotencyOptions } from '../../idempotency.options.js';
import type { StoreHandle } from '../../store/store.handle.js';
import { KAFKA_TRANSPORT, type KafkaDelivery } from './kafka-message.js';
import { KafkaOffsets } from './kafka-offsets.js';

type JoinListener = (event: { payload: { memberAssignment: Record<string, number[]> } }) => void;

/**
 * A `KafkaOffsets` following one `ServerKafka` whose consumer writes down what it was asked; the
 * store answers `stored` as the group's positions once `release` is called.
 */
function following(stored: { topic: string; partition: number; offset: string }[]) {
  const servers = new Subject<unknown>();
  const modules = { getRpcTargetRegistry: () => servers } as unknown as ModulesContainer;
  let release!: () => void;
  const answered = new Promise<void>((resolve) => (release = resolve));
  const store = { query: async () => (await answered, { rows: stored }) } as unknown as StoreHandle;
  const offsets = new KafkaOffsets({ kafkaOffsets: true } as ResolvedIdempotencyOptions, new AsyncLocalStorage<ActiveClaim>(), store, modules);
  const calls: string[] = [];
  let join!: JoinListener;
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join' },
    on: (_event: string, listener: JoinListener) => (join = listener),
    seek: (position: unknown) => void calls.push(`seek ${JSON.stringify(position)}`),
    pause: () => void calls.push('pause'),
    resume: () => void calls.push('resume'),
  };
  const server: { transportId: number; groupId: string; bindEvents(consumer: unknown): Promise<void> } = {
    transportId: KAFKA_TRANSPORT,
    groupId: 'credits-server',
    bindEvents: async () => undefined,
  };
  servers.next(server);
  void server.bindEvents(consumer);
  const record = (partition: number, offset: string) =>
    ({ getConsumer: () => consumer, getTopic: () => 'credits', getPartition: () => partition, getMessage: () => ({ offset }) }) as unknown as KafkaDelivery;
  return { offsets, calls, release, join: (memberAssignment: Record<string, number[]>) => join({ payload: { memberAssignment } }), record };
}

describe('KafkaOffsets', () => {
  it('at an assignment, seeks each assigned partition to its stored position, without pausing it meanwhile', async () => {
    const { offsets, calls, release, join, record } = following([
      { topic: 'credits', partition: 0, offset: '5' },
      { topic: 'credits', partition: 3, offset: '9' },
    ]);
    join({ credits: [0, 1] });
    const settled = offsets.settledAlready(record(0, '4'));
    expect(calls).toEqual([]);
    release();
    await settled;
    expect(calls).toEqual(['seek {"topic":"credits","partition":0,"offset":"5"}']);
  });

  it('answers a record behind its partition’s stored position as settled already, once the positions are read; a record at it or past it, and one of a partition without a position, are not', async () => {
    const { offsets, release, join, record } = following([{ topic: 'credits', partition: 0, offset: '5' }]);
    expect(offsets.settledAlready(record(0, '4'))).toBeUndefined();
    join({ credits: [0, 1] });
    const answers = Promise.all([offsets.settledAlready(record(0, '4')), offsets.settledAlready(record(0, '5')), offsets.settledAlready(record(1, '0'))]);
    release();
    expect(await answers).toEqual([true, false, false]);
  });

  it('answers from the last assignment’s positions: a later assignment’s replace an earlier one’s', async () => {
    const { offsets, release, join, record } = following([{ topic: 'credits', partition: 1, offset: '7' }]);
    join({ credits: [0] });
    join({ credits: [1] });
    release();
    expect(await Promise.all([offsets.settledAlready(record(1, '6')), offsets.settledAlready(record(1, '7'))])).toEqual([true, false]);
  });
});
