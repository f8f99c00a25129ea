import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { isPositiveInteger } from '../../options/option-values.js';
import { httpMessages } from './http.messages.js';

/**
 * What is recorded of a successful HTTP response, to replay it to duplicates: its status, its body
 * as the client received it (after serializers and interceptors), and the headers set while the
 * request was handled (by the handler, its interceptors and Nest), named in the casing they were
 * sent with, without `Set-Cookie`, `Date`, `Connection`, `Keep-Alive` and `Transfer-Encoding`, and
 * without those listed in `excludeHeaders`. A replay carries the `Content-Length` of the recorded
 * body, never chunked framing (and so does the first answer). Headers set before the handler (by
 * middleware, such as CORS) are set anew for each request, duplicates included.
 */
export interface ReplayOptions {
  /**
   * The largest response body recorded, in bytes. A larger response is sent and committed all the
   * same, but not recorded: its duplicates are answered 500 problem+json `response-too-large`
   * (replayed, the handler not run again), and the handler's first such response logs a warning
   * naming this option. A handler with `record: 'status'` keeps no body, so no limit applies to it.
   * @default 16777216 (16 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Response headers never recorded nor replayed, besides the ones above (case-insensitive), for
   * headers that describe one request rather than the operation, e.g. `['x-request-id']`.
   * @default []
   */
  excludeHeaders?: string[];
}

/**
 * `replay` with its defaults applied.
 * @internal
 */
export interface ResolvedReplayOptions {
  maxBodyBytes: number;
  /** Lower-cased names of the headers never recorded, the fixed ones included. */
  excludedHeaders: ReadonlySet<string>;
}

/** Headers that describe one response on one connection, or one client: never recorded. */
const NEVER_RECORDED_HEADERS = ['set-cookie', 'date', 'connection', 'keep-alive', 'transfer-encoding'];

/** The largest `replay.maxBodyBytes`: 64 MiB, far below PostgreSQL's 1 GB per value. */
const MAX_REPLAY_BODY_BYTES = 64 * 1024 * 1024;

/**
 * `replay` with its defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveReplay(replay: ReplayOptions): ResolvedReplayOptions {
  const maxBodyBytes = replay.maxBodyBytes ?? 16 * 1024 * 1024;
  if (!isPositiveInteger(maxBodyBytes) || maxBodyBytes > MAX_REPLAY_BODY_BYTES) {
    throw new IdempotencyOptionsError(httpMessages.invalidBodyLimit(maxBodyBytes, MAX_REPLAY_BODY_BYTES));
  }
  const excludeHeaders = replay.excludeHeaders ?? [];
  if (!Array.isArray(excludeHeaders) || !excludeHeaders.every((name) => typeof name === 'string' && name !== '')) {
    throw new IdempotencyOptionsError(httpMessages.invalidExcludedHeaders(excludeHeaders));
  }
  return {
    maxBodyBytes,
    excludedHeaders: new Set([...NEVER_RECORDED_HEADERS, ...excludeHeaders.map((name) => name.toLowerCase())]),
  };
}
