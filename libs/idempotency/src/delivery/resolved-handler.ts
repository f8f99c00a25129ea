import type { ExecutionContext } from '@nestjs/common';
import type { KeySource } from '../options/idempotent-handler.options.js';
import type { IdempotencyMode, InFlightPolicy, IsolationLevel, RecordPolicy } from '../options/handler-values.js';

/**
 * A handler's options with the module's defaults applied, and what the module needs to know of it.
 * @internal
 */
export interface ResolvedHandler {
  /** `Class.method`, the class being the concrete controller. */
  readonly name: string;
  /**
   * The name its claims are scoped to: the handler's `consumer` option, else its external contract
   * (`POST /webhooks/payments`, or the message pattern), which renaming a class or method leaves as it is.
   */
  readonly consumer: string;
  /**
   * The default consumer of versions before 0.3.0 (`Class.method`) when the handler sets no
   * `consumer` and that name differs: ids stored under it are still recognised while the store holds any.
   */
  readonly legacyConsumer: string | undefined;
  /** The handler sets `consumer` itself: it may share it with other handlers that name it too. */
  readonly namesConsumer: boolean;
  /** HTTP: the status a success is answered with (`@HttpCode()`, else 201 for POST and 200 otherwise). */
  readonly successStatus: number | undefined;
  /** HTTP: the route's request method (`'POST'`, ...); undefined for a message handler. */
  readonly requestMethod: string | undefined;
  /** Where its key is read, first found first (its `key`, else the module's `key` for its entry); undefined: the entry's default. */
  readonly key: readonly KeySource[] | undefined;
  /** False: a delivery without a key runs the handler unclaimed, as if it were not decorated (HTTP and GraphQL only). */
  readonly required: boolean;
  /**
   * The function answering the caller a key is scoped to (the handler's `scope`, else the module's
   * for a key from the client's `Idempotency-Key` header); `false`: shared on purpose; undefined:
   * shared, and warned about at start-up when the route is guarded (else at its first request
   * with an authenticated caller). Over HTTP the function's nullish answer is an anonymous caller.
   */
  readonly scope: ((context: ExecutionContext) => string | number | undefined) | false | undefined;
  /** HTTP: the key is the one the client chose, in the `Idempotency-Key` header. */
  readonly clientKey: boolean;
  readonly sender: string | ((context: ExecutionContext) => string);
  readonly retentionMs: number;
  /** Unset means the transport's default: `'reject'` for HTTP, `'wait'` for message handlers. */
  readonly inFlight: InFlightPolicy | undefined;
  /**
   * A function of what to hash; `'request'`: the HTTP method, URL and body, or a GraphQL
   * mutation's arguments (the default of HTTP routes and resolvers, whatever their key source);
   * `false`: no fingerprint is compared (the default of message patterns and `run()`).
   */
  readonly fingerprint: ((context: ExecutionContext) => unknown) | 'request' | false;
  /** Unset means the data source's default isolation level. */
  readonly isolationLevel: IsolationLevel | undefined;
  readonly maxAttempts: number;
  readonly retryDelayMs: number;
  /** HTTP and GraphQL: the seconds of the `Retry-After` of a refusal a retry may settle (409, 503). */
  readonly retryAfterSeconds: number;
  /** HTTP: the handler takes `@Res()` or `@Next()` without `passthrough`, so Nest sends nothing for it. */
  readonly respondsItself: boolean;
  readonly mode: IdempotencyMode;
  /** Lease mode: the lease, in milliseconds. */
  readonly leaseMs: number;
  /** Lease mode: how long after the claim the lease is renewed, in milliseconds; 0: never. */
  readonly renewLeaseForMs: number;
  readonly store: string;
  /** What of its answer is recorded for its duplicates. */
  readonly record: RecordPolicy;
  /** HTTP, transactional mode: the error statuses (4xx, and a 5xx the handler lists) whose answer is recorded, the handler's writes undone; empty: none. */
  readonly recordErrors: ReadonlySet<number>;
}
