import { type CallHandler, type ExecutionContext, Injectable } from '@nestjs/common';
import { NatsContext, RmqContext } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import type { Claim } from '../../claiming/claim.js';
import { ClaimingService } from '../../claiming/claiming.service.js';
import { IdempotencyMetadataAccessor, type ResolvedHandlerOptions } from '../../decorators/idempotency-metadata.accessor.js';
import { IdempotencyKeyReusedError } from '../../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../../errors/idempotency-key.error.js';
import { messages } from '../../idempotency.messages.js';
import { readPath, toMessageKey } from '../../keys/message-key.js';
import { RmqAcknowledgements, type Verdict } from './rmq-acknowledgements.js';

/** The header NATS JetStream uses for de-duplication, and the default key of NATS messages. */
const NATS_MSG_ID_HEADER = 'Nats-Msg-Id';

/**
 * Runs an idempotent `@EventPattern` / `@MessagePattern` handler: claim, handle, record; or
 * return the recorded reply. For RabbitMQ it also owns the acknowledgement of the message.
 */
@Injectable()
export class RpcDelivery {
  constructor(
    private readonly claims: ClaimingService,
    private readonly accessor: IdempotencyMetadataAccessor,
    private readonly acknowledgements: RmqAcknowledgements,
  ) {}

  async handle(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const options = this.accessor.resolve(context);
    const rpc = context.switchToRpc();
    const payload: unknown = rpc.getData();
    const transportContext: unknown = rpc.getContext();
    const settle = transportContext instanceof RmqContext ? this.acknowledgements.join(transportContext) : undefined;
    let claim: Claim | undefined;
    try {
      claim = this.claims.claimFor(options, 'wait', {
        key: readKey(options, context, payload, transportContext),
        sender: typeof options.sender === 'function' ? options.sender(context) : options.sender,
        payload,
      });
      const outcome = await this.claims.process(
        claim,
        () => lastValueFrom(next.handle(), { defaultValue: undefined }),
        (body) => ({ status: null, body }),
      );
      settle?.({ kind: 'ack' });
      return outcome.kind === 'processed' ? outcome.result : outcome.response.body;
    } catch (error) {
      settle?.(verdictFor(error, options, claim));
      throw error;
    }
  }
}

/** A message that can never succeed goes to the dead-letter path; any other failure is retried. */
function verdictFor(error: unknown, options: ResolvedHandlerOptions, claim: Claim | undefined): Verdict {
  const reason = error instanceof Error ? error.message : String(error);
  if (!claim || error instanceof IdempotencyKeyError || error instanceof IdempotencyKeyReusedError) {
    return { kind: 'dead-letter', reason };
  }
  return { kind: 'retry', attemptKey: `${claim.consumer}\u0000${claim.key}`, maxAttempts: options.maxAttempts, reason };
}

function readKey(options: ResolvedHandlerOptions, context: ExecutionContext, payload: unknown, transportContext: unknown): string {
  const source = options.key;
  if (typeof source === 'function') {
    return toMessageKey(source(context), 'the key function');
  }
  if (source && 'body' in source) {
    return toMessageKey(readPath(payload, source.body), `'${source.body}' in the message payload`);
  }
  if (transportContext instanceof RmqContext) {
    const { properties } = transportContext.getMessage() as { properties: { messageId?: unknown; headers?: Record<string, unknown> } };
    return source
      ? toMessageKey(properties.headers?.[source.header], `the ${source.header} message header`)
      : toMessageKey(properties.messageId, 'the AMQP messageId property');
  }
  if (transportContext instanceof NatsContext) {
    const headers = transportContext.getHeaders() as { has(name: string): boolean; get(name: string): string } | undefined;
    const name = source?.header ?? NATS_MSG_ID_HEADER;
    return toMessageKey(headers?.has(name) ? headers.get(name) : undefined, `the ${name} header`);
  }
  throw new IdempotencyKeyError(messages.unsupportedTransport(String((transportContext as object)?.constructor?.name)), 'transport');
}
