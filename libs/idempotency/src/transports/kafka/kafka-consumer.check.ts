import { Injectable } from '@nestjs/common';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { type MicroserviceServer, MicroserviceServerCheck } from '../microservice-server.check.js';
import { KAFKA_TRANSPORT } from './kafka-message.js';
import { kafkaMessages } from './kafka.messages.js';

/** What the check reads of Nest's `ServerKafka`: its group and the options of kafkajs's `consumer.run()`. */
interface KafkaServer extends MicroserviceServer {
  readonly groupId?: string;
  readonly options?: { readonly run?: { readonly autoCommit?: boolean } };
}

/**
 * Refuses a Kafka consumer that commits offsets itself (`autoCommit`, kafkajs's default) and
 * delivers to an idempotent handler: the module commits each offset after the claim's commit and
 * seeks back to a failed record, which kafkajs would already have committed past.
 */
@Injectable()
export class KafkaConsumerCheck extends MicroserviceServerCheck<KafkaServer> {
  protected isChecked(server: MicroserviceServer): server is KafkaServer {
    return server.transportId === KAFKA_TRANSPORT;
  }

  protected problemOf(server: KafkaServer): IdempotencyOptionsError | undefined {
    const autoCommit = server.options?.run?.autoCommit;
    const handler = autoCommit === false ? undefined : this.idempotentHandlerOf(server);
    const setting = autoCommit === undefined ? "autoCommit left to kafkajs's default, true" : `autoCommit: ${String(autoCommit)}`;
    return handler && new IdempotencyOptionsError(kafkaMessages.autoCommitLosesMessages(server.groupId ?? '(unnamed)', setting, handler.name));
  }
}
