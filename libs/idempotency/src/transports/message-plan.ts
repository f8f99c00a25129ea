import type { ExecutionContext } from '@nestjs/common';
import type { DeliveryCore } from '../delivery/delivery-core.js';
import type { HandlerPlan } from '../delivery/handler-plan.js';
import type { ResolvedHandler } from '../delivery/resolved-handler.js';
import { IdempotencyKeyError } from '../errors/idempotency.errors.js';
import { keyAbsence, type KeyLookup, keyReader, readPath, toMessageKey } from '../keys/message-key.js';
import type { InboundMessage, MessageTransport } from './message-transport.js';
import { transportMessages } from './transport.messages.js';

/**
 * One message to an idempotent handler, as the core hands it back to the message entry.
 * @internal
 */
export interface MessageSource {
  readonly transport: MessageTransport;
  readonly message: InboundMessage;
  /** Runs the handler. */
  readonly run: () => Promise<unknown>;
}

/**
 * A message handler's plan: the core's, the adapters that may read its deliveries (its
 * framework's; for a pattern, each transport of Nest's microservices, in the module's order), how
 * many idempotent handlers a message of its pattern reaches, and, for a GraphQL mutation whose key
 * is optional, whether a delivery carries none.
 * @internal
 */
export interface MessagePlan extends HandlerPlan<MessageSource> {
  readonly transports: readonly MessageTransport[];
  readonly fanOut: (pattern: string) => number;
  readonly keyless: ((context: ExecutionContext, source: MessageSource) => boolean) | undefined;
}

/**
 * The plan of `handler`, a message handler that `transports` read (none: its framework calls it,
 * through `defaultTransport`), with the in-flight default of its transport.
 * @internal
 */
export function compileMessagePlan(
  core: DeliveryCore,
  handler: ResolvedHandler,
  transports: readonly MessageTransport[],
  defaultTransport: MessageTransport | undefined,
  fanOut: MessagePlan['fanOut'],
): MessagePlan {
  const lookups = keyLookups(handler);
  const plan = core.plan<MessageSource>(handler, {
    key: lookups ? keyReader(lookups) : messageIdReader,
    request: ({ message }) => message.request,
    defaultInFlight: defaultTransport?.defaultInFlight ?? 'wait',
  });
  return Object.assign(plan, { transports, fanOut, keyless: handler.required ? undefined : keyAbsence(lookups ?? [MESSAGE_ID]) });
}

/** Where `handler` looks for its key (`key`: functions, payload fields, message headers); undefined: the broker's own message id. */
function keyLookups(handler: ResolvedHandler): KeyLookup<MessageSource>[] | undefined {
  return handler.key?.map((source): KeyLookup<MessageSource> => {
    if (typeof source === 'function') {
      return { where: 'the key function', find: (context) => source(context) };
    }
    if ('body' in source) {
      const path = source.body;
      return { where: `'${path}' in the message payload`, find: (_context, { message }) => readPath(message.payload, path) };
    }
    const name = source.header;
    return { where: `the ${name} message header`, find: (_context, { message }) => message.header(name) };
  });
}

/** The broker's own id of the message, the default key. */
const MESSAGE_ID: KeyLookup<MessageSource> = { where: 'the message id', find: (_context, { message }) => message.messageId };

/** Reads the default key, the broker's own id of the message, where its transport names one. */
function messageIdReader(_context: ExecutionContext, { transport, message }: MessageSource): string {
  if (transport.messageIdSource === undefined) {
    throw new IdempotencyKeyError(transportMessages.unsupportedTransport(transport.name), 'transport');
  }
  return toMessageKey(message.messageId, transport.messageIdSource);
}
