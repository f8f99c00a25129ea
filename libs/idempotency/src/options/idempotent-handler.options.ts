import type { ExecutionContext } from '@nestjs/common';
import type { Duration } from '../duration/duration.js';
import type { IdempotencyMode, InFlightPolicy, IsolationLevel, RecordPolicy } from './handler-values.js';

/**
 * Where a message's idempotency key is read from:
 * - `{ header: 'Idempotency-Key' }`: a request header (HTTP) or message header (brokers); the
 *   `Idempotency-Key` header of an HTTP request may hold the key bare (`k1`) or as the IETF draft
 *   writes it, a Structured Field string (`"k1"`): both are the key `k1`;
 * - `{ body: 'data.id' }`: a dotted path in the HTTP body, the message payload (webhooks) or a
 *   GraphQL mutation's arguments (`'input.requestId'`, `'idempotencyKey'`);
 * - a function of the execution context that returns the key (`undefined` or `null`: none).
 *
 * A list of them is tried in order, and the first that holds a value is the key:
 * `[{ body: 'idempotencyKey' }, { header: 'Idempotency-Key' }]`.
 */
export type KeySource =
  | { header: string }
  | { body: string }
  | ((context: ExecutionContext) => string | number | undefined | null);

/**
 * The ways in which deliveries reach handlers, for the module's defaults per entry: `http` (a
 * controller's route), `graphql` (a resolver's `@Mutation()`), `rpc` (a `@MessagePattern()` or
 * `@EventPattern()` of a Nest microservice: RabbitMQ, NATS, ...).
 */
export type KeyEntry = 'http' | 'graphql' | 'rpc';

/**
 * Whose namespace a key belongs to: a function of the execution context that answers the caller's
 * identity (a user or tenant id), run after the guards (so `request.user` is set); or `false`
 * for one namespace shared by every sender (webhooks keyed by a provider's event ids).
 */
export type ScopeSource = ((context: ExecutionContext) => string | number | undefined) | false;

/** Options of `@IdempotentHandler()`. Every field is optional. */
export interface IdempotentHandlerOptions {
  /**
   * `'transaction'` claims in the handler's own transaction; `'lease'` holds a lease instead, for
   * handlers whose effects are outside the database (see `IdempotencyMode`).
   * @default 'transaction'
   */
  mode?: IdempotencyMode;
  /**
   * Lease mode: how long the lease holds. While the handler runs, the module renews it every third
   * of this, up to `renewLeaseFor`; a delivery that finds a lease expired takes the message over.
   * @default '30s'
   */
  lease?: Duration;
  /**
   * Lease mode: how long after the claim the module keeps renewing the lease while the handler
   * runs (every third of `lease`, each renewal checked against the lease's token), so that a slow
   * handler keeps its message and a hung one lets go of it in the end: the lease holds until
   * `renewLeaseFor` after the claim (or `lease`, when that is longer), and a twin may take the
   * message over after that. `false`: never renewed (the lease holds `lease`, unless the handler
   * calls `IdempotencyContext.extendLease()`, which this bound does not limit).
   * @default '10m'
   * @example A handler that may take a few minutes: `@IdempotentHandler({ mode: 'lease', lease: '30s', renewLeaseFor: '15m' })`
   */
  renewLeaseFor?: Duration | false;
  /**
   * Lease mode: the store of the leases, `'postgres'` or a name of the module's `stores`.
   * @default the module's `store` (`'postgres'`)
   */
  store?: string;
  /**
   * Where the idempotency key comes from: a source, or a list of them tried in order (see `KeySource`).
   * @default the module's `key` for the handler's entry (`http`, `graphql`, `rpc`); else
   * `{ header: 'Idempotency-Key' }` for HTTP and GraphQL mutations (the header of the
   * request that carries the operation); the AMQP `messageId` property for RabbitMQ;
   * the `Nats-Msg-Id` header for NATS and NATS JetStream; for SQS the `MessageDeduplicationId`
   * (FIFO queues), else the `MessageId`; the job id for BullMQ
   */
  key?: KeySource | readonly KeySource[];
  /**
   * `false`: a request that carries no key (none of the key's sources holds a value) runs the
   * handler as if it were not decorated: no claim, no transaction of the module, nothing recorded,
   * `IdempotencyContext` not active. A request with a key is processed exactly once, as ever, and
   * a key that is there but invalid (empty, too long) is still refused. HTTP routes and GraphQL
   * mutations only: on a message handler it is refused at start-up.
   * @default true (a request without a key is refused: HTTP 400, GraphQL `IDEMPOTENCY_INVALID_KEY`)
   */
  required?: boolean;
  /**
   * Scopes the key to the caller: two callers who send the same key each get their own claim,
   * their own handler run and their own recorded answer. A function of the execution context
   * (run in the interceptor, after guards: `request.user` is set) returning the caller's identity,
   * checked like a key (1 to 255 printable characters; a bad answer is refused as bad input: HTTP
   * 400, a message is dead-lettered). Over HTTP, `undefined` or `null` means a caller who is not
   * signed in: such callers' keys share one anonymous namespace, apart from every signed-in
   * caller's and from unscoped keys; a message whose scope function answers nothing is refused.
   * `false` declares one namespace shared by every caller, on purpose (webhooks keyed by a
   * provider's event ids). Ids are stored as the scope's SHA-256 and the key, in the same column:
   * no schema change, the 255-character limit of the key stays.
   * @default the module's `scope` for a handler keyed by the client's `Idempotency-Key` header;
   * none otherwise (and then, for a key from the client's `Idempotency-Key` header, a warning at
   * start-up when the route is guarded, else at its first request with an authenticated caller,
   * `request.user`)
   * @example `scope: (context) => context.switchToHttp().getRequest().user?.id`
   */
  scope?: ScopeSource;
  /**
   * Who sent the message (a webhook provider, an upstream service): recorded with each claim and
   * used to count duplicates per sender. A function's answer is checked like a key (1 to 255
   * characters, no control characters; else the delivery is refused as bad input).
   * @default 'default'
   */
  sender?: string | ((context: ExecutionContext) => string);
  /**
   * The name the claim is scoped to: a key is processed once per consumer. Each handler needs its
   * own; the module refuses to start when two handlers claim the same name.
   * @default the handler's external contract, which renaming its class or method leaves as it is:
   * a route's method and path as the controller and the method declare them (`'POST /credits'`,
   * no global prefix, no version), a message pattern (`'credits.grant'`), a GraphQL mutation's
   * schema coordinate (`'graphql Mutation.grantCredit'`), a BullMQ queue (`'bullmq payments'`).
   * A method inherited by several controllers gets the contract of each. (Before 0.3.0 it was the
   * class and the method name, `'CreditsController.grant'`; ids stored under it are still recognised.)
   */
  consumer?: string;
  /**
   * How long the id is remembered after processing; must outlast the sender's redeliveries.
   * @default the module's `retention` (`'7d'`)
   */
  retention?: Duration;
  /**
   * `'reject'` answers a delivery whose twin is still in flight at once (HTTP 409 with
   * `Retry-After`; a broker message is retried after a delay); `'wait'` waits for the twin (up to
   * the module's `inFlightWaitTimeout`, without holding a pooled connection) and replays its
   * response, or processes if the twin rolled back.
   * @default 'reject' for HTTP and GraphQL mutations, 'wait' for message handlers
   */
  inFlight?: InFlightPolicy;
  /**
   * What of a delivery must be the same for a redelivery of its key to count as a duplicate: a
   * function of the execution context whose answer is hashed (SHA-256 of canonical JSON; bytes as
   * bytes), or `false` to compare nothing, so any delivery of a processed key is a duplicate. A key
   * reused with another fingerprint is refused (HTTP 422; RabbitMQ: dead-lettered).
   * @default whatever the key's source (a header, the body, a function), HTTP: the method, the URL
   * (path and query string) and the body; GraphQL: the mutation's arguments. A message pattern's
   * handler: none. A record written without one (by an earlier version) is not compared.
   * @example Leave out a provider's attempt counter:
   * `fingerprint: (context) => omit(context.switchToHttp().getRequest().body, 'attempt')`
   */
  fingerprint?: ((context: ExecutionContext) => unknown) | false;
  /**
   * The isolation level of the claim's transaction, in which the handler runs. A nested
   * transaction of the handler (`manager.transaction()`, `dataSource.transaction()`, a
   * `@Transactional()` method) that asks for a stronger level is refused.
   * @default the data source's `isolationLevel` option (TypeORM 1.x; 0.3 has none), else 'READ COMMITTED'
   */
  isolationLevel?: IsolationLevel;
  /**
   * What of the answer is recorded for duplicates: `'response'` (status, headers, body) or
   * `'status'` (the status alone; see `RecordPolicy`).
   * @default the module's `record` (`'response'`)
   */
  record?: RecordPolicy;
  /**
   * HTTP, transactional mode: the error statuses whose answer is recorded and replayed
   * to duplicates, as a success is: a business refusal such as `402 Payment Required`, thrown
   * as an `HttpException` or answered, is then given once and replayed with
   * `Idempotent-Replayed: true`, the handler not run again. The handler's writes are rolled back to
   * a savepoint taken right after the claim; the claim commits with the answer as the client
   * received it (after exception filters: its status, recorded headers and body). A status not
   * listed rolls everything back, as by default. A 5xx is recorded only where its handler lists it
   * (never by the module's default): one the service answers when a provider refused for good
   * (`502`); listing `500` records every unexpected failure too. This option is refused on a
   * lease-mode or message handler.
   * @default the module's `recordErrors` for HTTP handlers in the transactional mode (`[]`: no error is recorded)
   * @example `recordErrors: [402, 403]`, or `[402, 502]` where a 502 says the provider refused for good
   */
  recordErrors?: number[];
  /**
   * RabbitMQ: how many failed deliveries of a message before it is nacked without requeue, so the
   * queue's dead-letter exchange takes it. Counted by the queue's `x-delivery-count` header where
   * it has one (quorum queues), else by this process. NATS JetStream: the delivery at which a
   * failing message is terminated (`term`), counted by the broker. SQS: not used; the queue's
   * redrive policy (`maxReceiveCount`) dead-letters a message, and the module warns at start-up of
   * a queue without one. BullMQ: the job's own `attempts` apply instead (the module warns at
   * start-up of a queue whose `defaultJobOptions` give one attempt).
   * @default 5
   */
  maxAttempts?: number;
  /**
   * RabbitMQ: how long after a failed delivery the message is requeued; the delay doubles with
   * each further failure, up to 64 times this. The message stays unacknowledged (and counts
   * against the consumer's prefetch) meanwhile. NATS JetStream: the delay of the `nak` after the
   * first failed delivery, doubling with each further delivery, up to 64 times this. SQS: a failed
   * message is hidden (`ChangeMessageVisibility`) for this or the queue's visibility timeout,
   * whichever is longer, doubled with each receive of it (its `ApproximateReceiveCount`, which the
   * consumer must receive), up to 64 times that and at most 12 hours; so the redrive policy's
   * `maxReceiveCount` receives span that much longer. Not with sqs-consumer's
   * `terminateVisibilityTimeout`, which then applies. BullMQ: the job's own `backoff` applies instead.
   * @default '1s'
   */
  retryDelay?: Duration;
  /**
   * HTTP and GraphQL: how long a client is told to wait before it retries a refusal that a retry
   * may settle: a twin still in flight (409) and no database connection in time (503), in the
   * `Retry-After` header (GraphQL: `extensions.retryAfter`), in whole seconds (rounded up).
   * @default the module's `retryAfter` (`'1s'`)
   */
  retryAfter?: Duration;
}
