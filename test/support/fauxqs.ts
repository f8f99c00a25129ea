import { CreateQueueCommand, GetQueueAttributesCommand, PurgeQueueCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort } from './demo-process.js';
import { until } from './test-database.js';

/** SendMessageBatch calls in flight at once while `send` fills a queue (10 messages each, the most SQS takes). */
const SEND_WINDOW = 50;

/**
 * fauxqs, an SQS emulator from npm (not Amazon SQS), as a child process of the suite on a free port
 * of 127.0.0.1, with a client that talks to it. Its queues live in its memory: stopping it drops them.
 */
export class Fauxqs {
  private constructor(
    private readonly child: ChildProcess,
    readonly endpoint: string,
    readonly client: SQSClient,
  ) {}

  static async start(): Promise<Fauxqs> {
    const port = await freePort();
    const child = spawn(process.execPath, [resolve('node_modules/fauxqs/dist/cli.js')], {
      env: { ...process.env, FAUXQS_PORT: String(port), FAUXQS_LOGGER: 'false' },
      stdio: 'ignore',
    });
    const endpoint = `http://127.0.0.1:${port}`;
    await until(() => fetch(`${endpoint}/health`).then((response) => response.ok, () => false), 'fauxqs answers', 30_000);
    return new Fauxqs(child, endpoint, sqsClient(endpoint));
  }

  /** Creates a queue (a FIFO one when its name ends with `.fifo`); `deadLetterAfter` adds a dead-letter queue `<name>-dead` after that many receives. */
  async createQueue(name: string, visibilitySeconds: number, deadLetterAfter?: number): Promise<{ url: string; deadUrl: string | undefined }> {
    const fifo = name.endsWith('.fifo');
    const attributes: Record<string, string> = { VisibilityTimeout: String(visibilitySeconds), ...(fifo ? { FifoQueue: 'true' } : {}) };
    let deadUrl: string | undefined;
    if (deadLetterAfter !== undefined) {
      const deadName = fifo ? name.replace(/\.fifo$/, '-dead.fifo') : `${name}-dead`;
      deadUrl = (await this.client.send(new CreateQueueCommand({ QueueName: deadName, Attributes: fifo ? { FifoQueue: 'true' } : {} }))).QueueUrl!;
      const { Attributes } = await this.client.send(new GetQueueAttributesCommand({ QueueUrl: deadUrl, AttributeNames: ['QueueArn'] }));
      attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: String(deadLetterAfter) });
    }
    const url = (await this.client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
    return { url, deadUrl };
  }

  /** Messages in the queue, visible or in flight. */
  async depth(url: string): Promise<number> {
    const { Attributes } = await this.client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    return Number(Attributes!.ApproximateNumberOfMessages) + Number(Attributes!.ApproximateNumberOfMessagesNotVisible);
  }

  /** Sends `bodies` to the queue at `url` in batches of 10 (SQS gives each its `MessageId`); resolves once every batch was taken. */
  async send(url: string, bodies: readonly string[]): Promise<void> {
    const batches = Array.from({ length: Math.ceil(bodies.length / 10) }, (_, b) => bodies.slice(b * 10, b * 10 + 10));
    for (let start = 0; start < batches.length; start += SEND_WINDOW) {
      await Promise.all(
        batches.slice(start, start + SEND_WINDOW).map(async (batch) => {
          const entries = batch.map((body, n) => ({ Id: String(n), MessageBody: body }));
          const { Failed } = await this.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
          if (Failed && Failed.length > 0) {
            throw new Error(`fauxqs refused ${Failed.length} of a batch of ${entries.length}: ${Failed[0].Message}`);
          }
        }),
      );
    }
  }

  purge(url: string): Promise<unknown> {
    return this.client.send(new PurgeQueueCommand({ QueueUrl: url }));
  }

  async stop(): Promise<void> {
    this.client.destroy();
    const exited = new Promise((done) => this.child.once('exit', done));
    this.child.kill('SIGKILL');
    await exited;
  }
}

/** An SQS client of fauxqs at `endpoint` (any credentials are accepted). */
export function sqsClient(endpoint: string): SQSClient {
  return new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, useQueueUrlAsEndpoint: false });
}
