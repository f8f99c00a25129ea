import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { Subscription } from 'rxjs';
import type { ActiveClaim } from '../../context/idempotency.context.js';
import { CLAIM_STORAGE } from '../../data-layers/data-layer.js';
import { KAFKA_OFFSETS_TABLE_NAME } from '../../idempotency.constants.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../../idempotency.options.js';
import { StoreHandle } from '../../store/store.handle.js';
import { KAFKA_TRANSPORT, type KafkaConsumer, type KafkaDelivery, nextOffsetOf } from './kafka-message.js';
import { kafkaMessages } from './kafka.messages.js';

/** What the module calls of the kafkajs consumer of a group: its assignments' event, beside what settling calls. */
interface GroupConsumer extends Pick<KafkaConsumer, 'seek'> {
  readonly events: { readonly GROUP_JOIN: string };
  on(event: string, listener: (event: { payload: { memberAssignment: Record<string, number[]> } }) => void): unknown;
}

/** A consumer's stored positions at its last assignment, as `topic/partition` → next offset. */
type StoredPositions = ReadonlyMap<string, bigint>;

/** What the module reads and wraps of Nest's `ServerKafka`: its group, and the call that runs its consumer. */
interface KafkaServer {
  readonly transportId?: unknown;
  readonly groupId: string;
  bindEvents(consumer: GroupConsumer): Promise<void>;
}

/** Writes a group's position in a partition, never moving it back (two members of a rebalancing group may both write). */
const upsertSql = (group: string, topic: string, partition: string, nextOffset: string) =>
  `INSERT INTO "${KAFKA_OFFSETS_TABLE_NAME}" AS stored (group_id, topic, "partition", next_offset) VALUES (${group}, ${topic}, ${partition}, ${nextOffset}) ` +
  'ON CONFLICT (group_id, topic, "partition") DO UPDATE SET next_offset = GREATEST(stored.next_offset, EXCLUDED.next_offset)';

const positionsSql = `SELECT topic, "partition", next_offset::text AS offset FROM "${KAFKA_OFFSETS_TABLE_NAME}" WHERE group_id = $1 AND topic = ANY($2)`;

/**
 * With `kafkaOffsets: true`: keeps each Kafka consumer group's position per partition in the
 * database. The claim's transaction writes the offset after its record (`writeInClaim`), so the
 * position commits with the work; every other offset commit of the module (a duplicate's, a dead
 * letter's, a lease-mode handler's) writes it first (`write`), so the stored position is never
 * behind Kafka's. When the group assigns partitions to a consumer, it reads their stored positions
 * and seeks each partition to its own; a record behind its partition's stored position (one kafkajs
 * fetched before that seek took effect) is settled without its claim or its handler
 * (`settledAlready`). So a record whose claim committed is not processed again, even when Kafka's
 * commit of its offset was lost. Partitions are not paused meanwhile: kafkajs would sleep a whole
 * fetch wait before reading them, which slows every rebalance down.
 * @internal
 */
@Injectable()
export class KafkaOffsets implements OnModuleDestroy {
  readonly enabled: boolean;
  private readonly logger = new Logger('Idempotency');
  /** The group of each consumer of a `ServerKafka`. */
  private readonly groups = new WeakMap<object, string>();
  /** The stored positions of each consumer's last assignment, read when the group assigned it. */
  private readonly positions = new WeakMap<object, Promise<StoredPositions>>();
  private readonly subscription: Subscription | undefined;

  constructor(
    @Inject(RESOLVED_OPTIONS) options: ResolvedIdempotencyOptions,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly store: StoreHandle,
    modules: ModulesContainer,
  ) {
    this.enabled = options.kafkaOffsets;
    // From construction, as the servers' boot checks: a hybrid application may start its servers before any module hook runs.
    this.subscription = this.enabled ? modules.getRpcTargetRegistry().subscribe((target: unknown) => this.follow(target as KafkaServer)) : undefined;
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

  /**
   * Adds the position after the delivered record to the claim's COMMIT; nothing in lease mode, which has no claim transaction.
   * @returns whether it did.
   */
  writeInClaim(delivery: KafkaDelivery): boolean {
    const transaction = this.storage.getStore()?.transaction;
    const group = this.groups.get(delivery.getConsumer());
    if (!transaction || group === undefined) {
      return false;
    }
    const [groupLiteral, topicLiteral] = [transaction.literal(group), transaction.literal(delivery.getTopic())];
    transaction.defer(upsertSql(groupLiteral, topicLiteral, String(delivery.getPartition()), nextOffsetOf(delivery)));
    return true;
  }

  /**
   * Whether the record is behind its partition's stored position, so its claim committed already:
   * once the positions of the consumer's last assignment are read. Undefined for a consumer the
   * module does not follow.
   */
  settledAlready(delivery: KafkaDelivery): Promise<boolean> | undefined {
    const stored = this.positions.get(delivery.getConsumer());
    const position = `${delivery.getTopic()}/${delivery.getPartition()}`;
    return stored?.then((positions) => BigInt(delivery.getMessage().offset) < (positions.get(position) ?? 0n));
  }

  /** Writes the position after the delivered record in a transaction of its own. */
  async write(delivery: KafkaDelivery): Promise<void> {
    const group = this.groups.get(delivery.getConsumer());
    if (group !== undefined) {
      await this.store.query(upsertSql('$1', '$2', '$3', '$4'), [group, delivery.getTopic(), delivery.getPartition(), nextOffsetOf(delivery)]);
    }
  }

  /** Seeks the partitions of each assignment of the server's consumer to their stored positions. */
  private follow(server: KafkaServer): void {
    if (server.transportId !== KAFKA_TRANSPORT) {
      return;
    }
    const bindEvents = server.bindEvents.bind(server);
    server.bindEvents = (consumer) => {
      this.groups.set(consumer, server.groupId);
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => this.positions.set(consumer, this.seekStored(consumer, server.groupId, payload.memberAssignment)));
      return bindEvents(consumer);
    };
  }

  private async seekStored(consumer: GroupConsumer, group: string, assignment: Record<string, number[]>): Promise<StoredPositions> {
    const positions = new Map<string, bigint>();
    try {
      const { rows } = await this.store.query<{ topic: string; partition: number; offset: string }>(positionsSql, [group, Object.keys(assignment)]);
      for (const { topic, partition, offset } of rows) {
        if (assignment[topic].includes(partition)) {
          positions.set(`${topic}/${partition}`, BigInt(offset));
          consumer.seek({ topic, partition, offset });
        }
      }
    } catch (error) {
      this.logger.warn(kafkaMessages.positionsUnread(group, (error as Error).message));
    }
    return positions;
  }
}
