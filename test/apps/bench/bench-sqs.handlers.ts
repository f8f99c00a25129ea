import { type Message, SQSClient } from '@aws-sdk/client-sqs';
import { type DynamicModule, Injectable, Module } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { SqsMessageHandler, SqsModule } from '@ssut/nestjs-sqs';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import type { TransportArm } from './consumer-commands.js';
import { grantCredit } from './credit-grant.js';

/** Messages an SQS consumer receives at once (SQS's largest receive), all handled concurrently by sqs-consumer. */
export const SQS_BATCH_SIZE = 10;

/** The credit of an SQS message's JSON body. */
function creditOf(message: Message): { account: string; cents: number } {
  return toCreditRequest(JSON.parse(message.Body ?? 'null'));
}

/** The credit handler on an SQS queue (`@ssut/nestjs-sqs`), without the module: its own transaction; sqs-consumer deletes the message once it resolves. */
@Injectable()
export class PlainSqsHandler {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @SqsMessageHandler('plain')
  async plain(message: Message): Promise<void> {
    const { account, cents } = creditOf(message);
    await this.dataSource.transaction((manager) => grantCredit(manager, account, cents));
  }
}

/** The same credit, exactly once per SQS `MessageId`: the message is deleted after the claim's commit. */
@Injectable()
export class IdempotentSqsHandler {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @SqsMessageHandler('idempotent')
  @IdempotentHandler()
  async idempotent(message: Message): Promise<void> {
    const { account, cents } = creditOf(message);
    await grantCredit(this.idempotency.manager, account, cents);
  }
}

@Module({})
export class BenchSqsModule {
  /**
   * The handler of `variant` only, with a consumer (named after the variant) of the queue at
   * `queueUrl` on the SQS endpoint `endpoint`, short polling: the runner stops it between rounds.
   */
  static register(variant: TransportArm, endpoint: string, queueUrl: string): DynamicModule {
    const sqs = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' }, useQueueUrlAsEndpoint: false });
    return {
      module: BenchSqsModule,
      imports: [SqsModule.register({ consumers: [{ name: variant, queueUrl, sqs, batchSize: SQS_BATCH_SIZE, waitTimeSeconds: 0 }] })],
      providers: [variant === 'plain' ? PlainSqsHandler : IdempotentSqsHandler],
    };
  }
}
