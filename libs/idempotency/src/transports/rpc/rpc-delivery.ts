import { type CallHandler, type ExecutionContext, Injectable } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import type { ClaimRequest } from '../../claiming/claim.js';
import { translateDatabaseError } from '../../claiming/claim-errors.js';
import { ClaimingService } from '../../claiming/claiming.service.js';
import { LeaseClaimingService, type LeaseClaimRequest } from '../../leasing/lease-claiming.service.js';
import { IdempotencyMetadataAccessor, type ResolvedHandler } from '../../decorators/idempotency-metadata.accessor.js';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyKeyReusedError } from '../../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../../errors/idempotency-key.error.js';
import { messages } from '../../idempotency.messages.js';
import { readPath, toMessageKey } from '../../keys/message-key.js';
import { failureOutcome } from '../../metrics/delivery-outcome.js';
import { IdempotencyMetricsService } from '../../metrics/idempotency-metrics.service.js';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import { ResponseRecording } from '../../recording/response-recording.js';
import { IdempotencyTracing } from '../../tracing/idempotency-tracing.js';
import { claimByMode, claimRequestFor } from '../claim-request.js';
import { RmqAcknowledgements, type Verdict } from './rmq-acknowledgements.js';

type Microservices = typeof import('@nestjs/microservices');

/** The header NATS JetStream uses for de-duplication, and the default key of NATS messages. */
const NATS_MSG_ID_HEADER = 'Nats-Msg-Id';

/**
 * Runs an idempotent `@EventPattern` / `@MessagePattern` handler: claim, handle, record and
 * commit; or return the recorded reply. For RabbitMQ it also owns the acknowledgement of the
 * message. `@nestjs/microservices` is loaded at the first message, as only an application that
 * receives messages has it.
 */
@Injectable()
export class RpcDelivery {
  private microservices: Promise<Microservices> | undefined;

  constructor(
    private readonly claims: ClaimingService,
    private readonly leases: LeaseClaimingService,
    private readonly recording: ResponseRecording,
    private readonly accessor: IdempotencyMetadataAccessor,
    private readonly explorer: IdempotencyExplorer,
    private readonly acknowledgements: RmqAcknowledgements,
    private readonly metrics: IdempotencyMetricsService,
    private readonly tracing: IdempotencyTracing,
  ) {}

  async handle(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const { RmqContext, NatsContext } = await (this.microservices ??= loadOptionalPackage(
      '@nestjs/microservices',
      'idempotent message handlers',
      () => import('@nestjs/microservices'),
    ));
    const handler = this.accessor.resolve(context);
    const rpc = context.switchToRpc();
    const payload: unknown = rpc.getData();
    const transportContext: unknown = rpc.getContext();
    const rmq = transportContext instanceof RmqContext ? transportContext : undefined;
    const settle = rmq ? this.acknowledgements.join(rmq, this.explorer.eventHandlersOf(rmq.getPattern())) : undefined;
    const transport = rmq ? 'rabbitmq' : transportContext instanceof NatsContext ? 'nats' : 'unknown';
    const trace = this.tracing.start({ consumer: handler.consumer, mode: handler.mode, transport });
    let request: LeaseClaimRequest | undefined;
    try {
      try {
        request = claimRequestFor(
          handler,
          context,
          {
            key: () => readKey(handler, context, payload, transportContext, { RmqContext, NatsContext }),
            defaultInFlight: 'wait',
          },
          this.metrics,
        );
      } catch (error) {
        trace.fail(error);
        throw error;
      }
      const claimed = request;
      const outcome = await trace.claim(claimed, () => claimByMode(handler, claimed, this.claims, this.leases, this.recording));
      if (outcome.kind === 'duplicate') {
        settle?.({ kind: 'ack' });
        return outcome.response.body === null ? undefined : JSON.parse(outcome.response.body.toString('utf8'));
      }
      const { claim } = outcome;
      let result: unknown;
      try {
        result = await claim.run(() => lastValueFrom(next.handle(), { defaultValue: undefined }));
      } catch (error) {
        const failure = translateDatabaseError(error, request);
        await claim.rollback(failureOutcome(failure), failure);
        throw failure;
      }
      const reply = JSON.stringify(result);
      await claim.commit({ status: null, headers: null, body: reply === undefined ? null : Buffer.from(reply) });
      settle?.({ kind: 'ack' });
      return result;
    } catch (error) {
      settle?.(verdictFor(error, handler, request));
      throw error;
    }
  }
}

/** A message that can never succeed goes to the dead-letter path; any other failure is retried after a delay. */
function verdictFor(error: unknown, handler: ResolvedHandler, request: ClaimRequest | undefined): Verdict {
  const reason = error instanceof Error ? error.message : String(error);
  if (!request || error instanceof IdempotencyKeyError || error instanceof IdempotencyKeyReusedError) {
    return { kind: 'dead-letter', reason };
  }
  return {
    kind: 'retry',
    attemptKey: `${request.consumer}\u0000${request.key}`,
    maxAttempts: handler.maxAttempts,
    retryDelayMs: handler.retryDelayMs,
    reason,
  };
}

function readKey(
  handler: ResolvedHandler,
  context: ExecutionContext,
  payload: unknown,
  transportContext: unknown,
  { RmqContext, NatsContext }: Pick<Microservices, 'RmqContext' | 'NatsContext'>,
): string {
  const source = handler.key;
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
