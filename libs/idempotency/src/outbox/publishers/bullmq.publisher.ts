import type { Queue } from 'bullmq';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import type { OutboxPublisher, OutgoingMessage } from '../outbox-publisher.js';

/** The job name of a message without a pattern, unless `BullMqPublisherOptions.jobName` says otherwise. */
const DEFAULT_JOB_NAME = 'outbox';

/** `BullMqPublisher`'s options. */
export interface BullMqPublisherOptions {
  /**
   * Redis, as BullMQ's `Queue` takes it (its `connection` option): a node-redis or ioredis client,
   * which the queues share and leave open for you to close, or ioredis options (`{ host, port }`,
   * with `ioredis` installed; BullMQ cannot load it from native ESM, where a client is needed).
   */
  readonly connection: object;
  /** The prefix of the queues' Redis keys, as BullMQ's `Queue` takes it; BullMQ's default (`bull`) when not given. */
  readonly prefix?: string;
  /**
   * The name of the jobs of messages without a `pattern` (a message's pattern is its job's name).
   * @default 'outbox'
   */
  readonly jobName?: string;
  /**
   * Options of every job (`attempts`, `backoff`, `removeOnComplete`, ...), as BullMQ's
   * `defaultJobOptions`; the `jobId` is always the message's id. BullMQ refuses a job whose id a
   * job it still keeps has: a `removeOnComplete` shortens how long a resent message is dropped there.
   */
  readonly jobOptions?: Readonly<Record<string, unknown>>;
}

/**
 * Publishes outbox messages to BullMQ queues (`bullmq`, an optional peer): the message's `address`
 * is the queue's name, its id the job's `jobId` (the key this module's BullMQ processors read:
 * BullMQ adds no second job with an id a job it keeps already has), its parsed payload the job's
 * data, and its pattern the job's name, else `'outbox'` (`jobName`). A publish resolves when Redis
 * stored the job. BullMQ jobs have no headers, and BullMQ refuses ids that are integers or hold a
 * `:`: `refuse()` answers such messages. Each queue is opened at its first message and kept;
 * `close()` closes them.
 *
 * @example
 * ```ts
 * outbox: { publishers: { bullmq: new BullMqPublisher({ connection: createClient({ url: process.env.REDIS_URL }) }) } }
 * ```
 */
export class BullMqPublisher implements OutboxPublisher {
  private readonly queues = new Map<string, Promise<Queue>>();

  constructor(private readonly options: BullMqPublisherOptions) {}

  refuse(message: OutgoingMessage): string | undefined {
    if (Object.keys(message.headers).length > 0) {
      return 'a BullMQ job has no headers: put what they say in the payload.';
    }
    if (String(Number.parseInt(message.id, 10)) === message.id || message.id.includes(':')) {
      return `BullMQ refuses a job id that is an integer or holds a ':' (the id is '${message.id}').`;
    }
    if (message.address === '' || message.address.includes(':')) {
      return `a BullMQ queue name is neither empty nor holds a ':' (the address is '${message.address}').`;
    }
    return undefined;
  }

  async publish(message: OutgoingMessage): Promise<void> {
    const queue = await this.queue(message.address);
    await queue.add(message.pattern ?? this.options.jobName ?? DEFAULT_JOB_NAME, JSON.parse(message.payload) as unknown, { jobId: message.id });
  }

  async close(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map(async (opening) => (await opening.catch(() => undefined))?.close()));
  }

  private queue(name: string): Promise<Queue> {
    let opening = this.queues.get(name);
    if (opening === undefined) {
      opening = this.open(name);
      this.queues.set(name, opening);
      // A queue that could not be made (bullmq not installed) is tried again by the next message.
      opening.catch(() => this.queues.get(name) === opening && this.queues.delete(name));
    }
    return opening;
  }

  private async open(name: string): Promise<Queue> {
    const { Queue } = await loadOptionalPackage('bullmq', 'BullMqPublisher', () => import('bullmq'));
    const queue = new Queue(name, {
      connection: this.options.connection as never,
      ...(this.options.prefix === undefined ? {} : { prefix: this.options.prefix }),
      ...(this.options.jobOptions === undefined ? {} : { defaultJobOptions: this.options.jobOptions }),
    });
    // Redis errors surface as the publishes' rejections; unheard, the queue's 'error' event would end the process.
    queue.on('error', () => undefined);
    return queue;
  }
}
