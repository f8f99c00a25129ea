import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { BacklogMessage } from './drain-backlog.js';

/** The NATS server (with JetStream) a bench run uses: `NATS_URL`, else the local default. */
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** Publishes awaiting their acknowledgement at once while a round fills its stream. */
const PUBLISH_WINDOW = 500;

/** The runner's connection to JetStream: it creates the streams the bench consumers read, fills them, and looks into them. */
export interface BenchJetStream {
  readonly url: string;
  /**
   * Creates the stream `name` of `subject` alone, in memory and with work-queue retention, so that
   * a message leaves it once acknowledged; a stream of that name a dead run left is deleted first.
   */
  createStream(name: string, subject: string): Promise<void>;
  /** Publishes `messages` to `subject`, each with its id as `Nats-Msg-Id`, and waits until JetStream has acknowledged every one. */
  publish(subject: string, messages: readonly BacklogMessage[]): Promise<void>;
  /** The messages the stream holds: not yet acknowledged by its consumer, delivered or not. */
  messages(stream: string): Promise<number>;
  deleteStream(name: string): Promise<void>;
  close(): Promise<void>;
}

/** Connects to the NATS server at `url`; rejects when it does not answer or has no JetStream. */
export async function openBenchJetStream(url = NATS_URL): Promise<BenchJetStream> {
  const connection = await connect({ servers: url, name: 'idem-bench-runner' });
  try {
    const manager = await jetstreamManager(connection);
    const client = jetstream(connection);
    return {
      url,
      createStream: async (name, subject) => {
        await manager.streams.delete(name).catch(() => undefined);
        await manager.streams.add({ name, subjects: [subject], retention: RetentionPolicy.Workqueue, storage: StorageType.Memory });
      },
      publish: async (subject, messages) => {
        for (let start = 0; start < messages.length; start += PUBLISH_WINDOW) {
          const window = messages.slice(start, start + PUBLISH_WINDOW);
          await Promise.all(window.map(({ messageId, data }) => client.publish(subject, JSON.stringify(data), { msgID: messageId })));
        }
      },
      messages: async (stream) => (await manager.streams.info(stream)).state.messages,
      deleteStream: async (name) => {
        await manager.streams.delete(name);
      },
      close: () => connection.close(),
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}
