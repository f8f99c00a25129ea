/* The values of handler options that the claim, the store schema, recording and tracing read as well as the decorator. */

/** What a delivery does while its twin (same consumer and key) is being processed and not committed. */
export type InFlightPolicy = 'reject' | 'wait';

/**
 * How a handler is made idempotent:
 * - `'transaction'`: the claim is made in the handler's own PostgreSQL transaction and commits
 *   with its writes (exactly once, for effects in that database);
 * - `'lease'`: the claim commits at once as a lease, the handler runs with no transaction held,
 *   and its success completes the message (for handlers with effects elsewhere: call them with
 *   `IdempotencyContext.downstreamKey`, so a retried call is recognised).
 */
export type IdempotencyMode = 'transaction' | 'lease';

/**
 * What is recorded of a handler's answer, to give its duplicates:
 * - `'response'`: an HTTP response's status, headers (those set while the request was handled,
 *   see `ReplayOptions`) and body; a message handler's reply;
 * - `'status'`: the HTTP status only. A duplicate is answered that status with an empty body and
 *   no recorded header: only the headers set before the handler (by middleware, e.g. CORS), the
 *   server's own (`Date`, `Connection`, `Content-Length: 0`) and `Idempotent-Replayed: true`. For
 *   webhooks, whose provider reads the status alone, and answers that should not be kept. A
 *   message handler's duplicate gets no reply.
 */
export type RecordPolicy = 'response' | 'status';

/** A PostgreSQL transaction isolation level. */
export type IsolationLevel = 'READ UNCOMMITTED' | 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';
