import { type ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import type { InboundMessage, MessageTransport } from '../message-transport.js';
import { NEST_MICROSERVICES, type NestMicroservices } from '../nest-microservices.js';
import { KAFKA_KEY_HEADER, KAFKA_TRANSPORT_NAME, type KafkaDelivery, KafkaSettlement } from './kafka-message.js';
import { KafkaOffsets } from './kafka-offsets.js';

/**
 * Kafka through `@nestjs/microservices` (`Transport.KAFKA`, kafkajs, with `run: { autoCommit: false }`):
 * an `@EventPattern` handler of a topic. The key is the `Idempotency-Key` header; the module
 * settles each record itself (see `KafkaSettlement`): it commits the offset after the claim
 * committed, retries a failure by pausing the partition and seeking back to the record, and
 * dead-letters to `<topic>.DLT`; it logs each failure itself, and Nest does not log it again. With
 * `kafkaOffsets: true`, the claim's transaction also writes the consumer's position, and a record
 * behind the stored position is settled without its claim (see `KafkaOffsets`).
 */
@Injectable()
export class KafkaTransport implements MessageTransport {
  readonly name = KAFKA_TRANSPORT_NAME;
  readonly messageIdSource = `the ${KAFKA_KEY_HEADER} header`;
  private readonly settlement: KafkaSettlement;

  constructor(
    @Inject(NEST_MICROSERVICES) private readonly microservices: NestMicroservices | undefined,
    private readonly offsets: KafkaOffsets,
  ) {
    this.settlement = new KafkaSettlement(new Logger('Idempotency'), offsets.enabled ? offsets : undefined);
  }

  read(context: ExecutionContext): InboundMessage | undefined {
    const kafka: unknown = context.getArgByIndex(1);
    if (context.getType() !== 'rpc' || !this.microservices || !(kafka instanceof this.microservices.KafkaContext)) {
      return undefined;
    }
    const delivery = kafka as unknown as KafkaDelivery;
    const headers = delivery.getMessage().headers ?? {};
    const messageId = headers[KAFKA_KEY_HEADER];
    let settled = false;
    // Whether the claim's COMMIT carries the record's position (kafkaOffsets): its ack then writes none again.
    let positionInClaim = false;
    return {
      payload: context.getArgByIndex(0),
      messageId,
      header: (name) => headers[name],
      settledAlready: this.offsets.enabled ? this.offsets.settledAlready(delivery) : undefined,
      beforeCommit: this.offsets.enabled ? () => void (positionInClaim = this.offsets.writeInClaim(delivery)) : undefined,
      settle: (verdict) => {
        const settling = settled ? Promise.resolve() : this.settlement.settle(delivery, messageId, verdict, positionInClaim);
        settled = true;
        // A failure is answered as handled once its retry or dead letter is under way: kafkajs must not retry it on its own.
        return verdict.kind === 'ack' ? settling : { reply: settling.then(() => undefined) };
      },
    };
  }
}
