import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './bench-database.js';
import type { BacklogMessage } from './drain-backlog.js';

/** How long fauxqs may take to answer after it was started. */
const START_TIMEOUT_MS = 30_000;
/** SendMessageBatch calls in flight at once while a round fills its queue (10 messages each, the most SQS takes). */
const SEND_WINDOW = 50;

/** The messages of a queue: visible, and received but not deleted (in flight). */
export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
}

/**
 * fauxqs, an SQS emulator from npm (not Amazon SQS), as a child process of the runner on a free
 * port of 127.0.0.1 (on the runner's Node, as the SQS suite starts it), with a client of it. Its
 * queues live in its memory: stopping it drops them.
 */
export interface BenchFauxqs {
  readonly endpoint: string;
  /** Creates a standard queue; returns its URL. */
  createQueue(name: string): Promise<string>;
  /** Sends `messages` to the queue at `url`, their credits as JSON bodies (SQS gives each its `MessageId`), and waits until every send was answered. */
  send(url: string, messages: readonly BacklogMessage[]): Promise<void>;
  depth(url: string): Promise<QueueDepth>;
  stop(): Promise<void>;
}

/** Starts fauxqs (a devDependency of the project); rejects when it is not installed or does not answer. */
export async function startBenchFauxqs(): Promise<BenchFauxqs> {
  // Its CLI, which the package's exports do not name (the SQS suite runs it from the same place).
  const cli = join(process.cwd(), 'node_modules', 'fauxqs', 'dist', 'cli.js');
  if (!existsSync(cli)) {
    throw new Error(`fauxqs is not installed (no ${cli}): run npm ci`);
  }
  const port = await freePort();
  const child = spawn(process.execPath, [cli], { env: { ...process.env, FAUXQS_PORT: String(port), FAUXQS_LOGGER: 'false' }, stdio: 'ignore' });
  const exited = new Promise((done) => child.once('exit', done));
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await answering(endpoint, child);
  } catch (error) {
    await kill(child, exited);
    throw error;
  }
  const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' }, useQueueUrlAsEndpoint: false });
  return {
    endpoint,
    createQueue: async (name) => (await client.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!,
    send: async (url, messages) => {
      const batches = Array.from({ length: Math.ceil(messages.length / 10) }, (_, b) => messages.slice(b * 10, b * 10 + 10));
      for (let start = 0; start < batches.length; start += SEND_WINDOW) {
        await Promise.all(
          batches.slice(start, start + SEND_WINDOW).map(async (batch) => {
            const entries = batch.map(({ data }, n) => ({ Id: String(n), MessageBody: JSON.stringify(data) }));
            const { Failed } = await client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
            if (Failed && Failed.length > 0) {
              throw new Error(`fauxqs refused ${Failed.length} of a batch of ${entries.length}: ${Failed[0].Message}`);
            }
          }),
        );
      }
    },
    depth: async (url) => {
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
      );
      return { visible: Number(Attributes!.ApproximateNumberOfMessages), inFlight: Number(Attributes!.ApproximateNumberOfMessagesNotVisible) };
    },
    stop: async () => {
      client.destroy();
      await kill(child, exited);
    },
  };
}

/** Polls fauxqs' health route until it answers; fails when the process exits or the time is up. */
async function answering(endpoint: string, child: ChildProcess): Promise<void> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`fauxqs exited with ${child.exitCode} before it answered`);
    }
    if (await fetch(`${endpoint}/health`).then((response) => response.ok, () => false)) {
      return;
    }
    if (performance.now() > deadline) {
      throw new Error(`fauxqs did not answer at ${endpoint} within ${START_TIMEOUT_MS / 1000} s`);
    }
    await new Promise((done) => setTimeout(done, 100));
  }
}

async function kill(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
  }
  await exited;
}
