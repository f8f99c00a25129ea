import type { OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * Header values as recorded: by name in the casing it was sent with (`X-Request-Trace`), numbers as
 * text. Names are unique regardless of case; rows recorded by earlier versions have lower-case names.
 */
export type HeaderValues = Record<string, string | string[]>;

/**
 * The headers of `raw` (or those `headers` gives, by lower-case name, as `getHeaders()` answers),
 * named as they are sent: in the casing `setHeader()` was called with.
 */
export function headersAsSent(raw: ServerResponse, headers?: Record<string, unknown>): HeaderValues {
  // Node's getRawHeaderNames() (15.13+), which @types/node does not declare.
  const sentNames = (raw as { getRawHeaderNames?: () => string[] }).getRawHeaderNames?.();
  const values: HeaderValues = {};
  if (headers === undefined && sentNames) {
    // raw's own headers: each name as sent is one of them, read by that name, in the order getHeaders() answers.
    for (const name of sentNames) {
      const value = raw.getHeader(name);
      if (value !== undefined) {
        values[name] = Array.isArray(value) ? value.map(String) : String(value);
      }
    }
    return values;
  }
  const sentAs = new Map<string, string>();
  for (const name of sentNames ?? []) {
    sentAs.set(name.toLowerCase(), name);
  }
  headers ??= raw.getHeaders();
  for (const name in headers) {
    const value = headers[name];
    const sent = sentAs.get(name.toLowerCase());
    // Names `getHeaders()` answers are unique; two of `writeHead()`'s that differ in case alone meet under their one sent name.
    if (value !== undefined) {
      values[sent ?? name] = Array.isArray(value) ? value.map(String) : String(value);
    }
  }
  return values;
}

/** `sets` merged in order, names compared regardless of case: a later set's value wins, with its name's casing. */
export function mergeHeaders(...sets: HeaderValues[]): HeaderValues {
  const merged: HeaderValues = {};
  for (const set of sets) {
    for (const [name, value] of Object.entries(set)) {
      setHeaderValue(merged, name, value);
    }
  }
  return merged;
}

/** The name `headers` holds `name` under, in whatever casing. */
export function findHeaderName(headers: HeaderValues | OutgoingHttpHeaders, name: string): string | undefined {
  // Names are unique regardless of case, so a name held as given is the one.
  if (Object.hasOwn(headers, name)) {
    return name;
  }
  const lower = name.toLowerCase();
  for (const candidate in headers) {
    if (candidate.length === name.length && candidate.toLowerCase() === lower) {
      return candidate;
    }
  }
  return undefined;
}

/** Sets `name` in `headers`, replacing the value it has under any casing; numbers become text, `undefined` is skipped. */
function setHeaderValue(headers: HeaderValues, name: string, value: unknown): void {
  if (value === undefined) {
    return;
  }
  const existing = findHeaderName(headers, name);
  if (existing !== undefined && existing !== name) {
    delete headers[existing];
  }
  headers[name] = Array.isArray(value) ? value.map(String) : String(value);
}

/** A status whose answer has a body, and so a Content-Length: not 1xx, 204 or 304. */
function hasBody(status: number): boolean {
  return status >= 200 && status !== 204 && status !== 304;
}

/** What the platform wrote to a response, held back before anything reached the client. */
export interface CapturedResponse {
  readonly status: number;
  /** Every header of the response at its end, by name as it is sent. */
  readonly headers: HeaderValues;
  readonly body: Buffer;
}

type WriteCallback = (error?: Error | null) => void;
type Writer = Pick<ServerResponse, 'writeHead' | 'write' | 'end' | 'flushHeaders'>;

/**
 * Holds back what the platform (Express, Fastify, a `@Res()` handler, a streamed file) writes to
 * Node's `ServerResponse` until the response ends, so that the claim commits before the client
 * sees its answer, and so that what is recorded for replays is exactly what the client receives:
 * status, headers (names in their casing) and body bytes after every serializer and interceptor.
 * Then it sends what was written, or something else in its place (a replay, a problem answer), and
 * lets go of the response. A response sent whole goes out with the `Content-Length` of its body,
 * never chunked, so that the first answer and its replays are framed alike.
 */
export class ResponseCapture {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private joined: Buffer | undefined;
  private status: number | undefined;
  private headArguments: OutgoingHttpHeaders = {};
  private endCallback: (() => void) | undefined;
  private ended = false;
  private released = false;
  private onEnd: (() => void) | undefined;
  /** What is written is going to be replaced: it is counted, not kept. */
  private discarding = false;
  /** The writers the response had, its own (a middleware's, compression's say) or its class's: they get what is sent. */
  private readonly own: Writer;

  private constructor(private readonly raw: ServerResponse) {
    const { writeHead, write, end, flushHeaders } = raw;
    this.own = { writeHead, write, end, flushHeaders };
    Object.assign(raw, {
      writeHead: (status: number, ...rest: unknown[]) => this.holdHead(status, rest),
      write: (chunk: unknown, encoding?: unknown, callback?: unknown) => this.holdChunk(chunk, encoding, callback),
      end: (chunk?: unknown, encoding?: unknown, callback?: unknown) => this.holdEnd(chunk, encoding, callback),
      flushHeaders: () => undefined,
    });
  }

  /** Starts holding back what is written to `raw`. */
  static attach(raw: ServerResponse): ResponseCapture {
    return new ResponseCapture(raw);
  }

  /** Calls `onEnd` once the response has been ended (now, if it already was). */
  whenEnded(onEnd: (captured: CapturedResponse) => void): void {
    this.onEnd = () => onEnd(this.captured());
    if (this.ended) {
      this.onEnd();
    }
  }

  /**
   * Sends `status`, `headers` and `body` as `replace()` does, once the response has been ended
   * (now, if it already was); what is written until then is discarded as it comes.
   */
  replaceWhenEnded(status: number, headers: HeaderValues, body: Buffer): void {
    this.discarding = true;
    this.chunks.length = 0;
    this.onEnd = () => this.replace(status, headers, body);
    if (this.ended) {
      this.onEnd();
    }
  }

  /**
   * Sends what was written, and lets go: whatever comes later goes out as written. A response
   * ended whole goes with the Content-Length of its body, unless its writer framed it itself.
   */
  flush(): void {
    if (this.released) {
      return;
    }
    const ended = this.ended;
    this.release();
    if (ended) {
      const status = this.status ?? this.raw.statusCode;
      if (hasBody(status) && !this.framed('content-length') && !this.framed('transfer-encoding')) {
        this.headArguments['Content-Length'] = this.size;
      }
      this.raw.writeHead(status, this.headArguments);
    } else if (this.status !== undefined) {
      this.raw.writeHead(this.status, this.headArguments);
    }
    if (ended) {
      this.raw.end(this.body(), this.endCallback);
    } else if (this.size > 0) {
      this.raw.write(this.body());
    }
  }

  /** Discards what was written and lets go, for another writer (an exception filter) to answer. */
  discard(): void {
    this.release();
  }

  /**
   * Sends `status`, `headers` (names as given) and `body` in place of what was written, which is
   * discarded with every header set on the response so far, and lets go. The body goes with its
   * `Content-Length`, under the name `headers` has for it if any.
   */
  replace(status: number, headers: HeaderValues, body: Buffer): void {
    if (this.released) {
      return;
    }
    const callback = this.endCallback;
    this.release();
    for (const name of this.raw.getHeaderNames()) {
      this.raw.removeHeader(name);
    }
    const sent = { ...headers };
    const framing = findHeaderName(sent, 'content-length');
    if (framing !== undefined) {
      delete sent[framing];
    }
    const chunked = findHeaderName(sent, 'transfer-encoding');
    if (chunked !== undefined) {
      delete sent[chunked];
    }
    if (hasBody(status)) {
      sent[framing ?? 'Content-Length'] = String(body.length);
    }
    this.raw.writeHead(status, sent);
    this.raw.end(body, callback);
  }

  private holdHead(status: number, rest: unknown[]): ServerResponse {
    this.status = status;
    const headers = rest.find((argument) => typeof argument === 'object' && argument !== null) as
      | OutgoingHttpHeaders
      | OutgoingHttpHeader[]
      | undefined;
    const entries: [string, OutgoingHttpHeader | undefined][] = [];
    if (Array.isArray(headers)) {
      for (let index = 0; index + 1 < headers.length; index += 2) {
        entries.push([String(headers[index]), headers[index + 1]]);
      }
    } else if (headers) {
      entries.push(...Object.entries(headers));
    }
    for (const [name, value] of entries) {
      const existing = findHeaderName(this.headArguments, name);
      if (existing !== undefined && existing !== name) {
        delete this.headArguments[existing];
      }
      this.headArguments[name] = value;
    }
    return this.raw;
  }

  private holdChunk(chunk: unknown, encoding: unknown, callback: unknown): boolean {
    const done = [encoding, callback].find((argument) => typeof argument === 'function') as WriteCallback | undefined;
    if (!this.ended && !this.discarding && chunk !== undefined && chunk !== null) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      this.size += bytes.length;
      this.chunks.push(bytes);
    }
    if (done) {
      process.nextTick(done);
    }
    return true;
  }

  private holdEnd(chunk: unknown, encoding: unknown, callback: unknown): ServerResponse {
    if (this.ended) {
      return this.raw;
    }
    const done = [chunk, encoding, callback].find((argument) => typeof argument === 'function') as (() => void) | undefined;
    if (typeof chunk !== 'function') {
      this.holdChunk(chunk, encoding, undefined);
    }
    this.ended = true;
    this.endCallback = done;
    this.onEnd?.();
    return this.raw;
  }

  /** Whether the response's writer framed its body itself, with the header `name` set or given to writeHead(). */
  private framed(name: string): boolean {
    return this.raw.hasHeader(name) || findHeaderName(this.headArguments, name) !== undefined;
  }

  /**
   * What was written, joined once: the body recorded is the body sent. Read once the response
   * ended or is let go, when nothing more is held.
   */
  private body(): Buffer {
    return (this.joined ??= Buffer.concat(this.chunks));
  }

  private captured(): CapturedResponse {
    // writeHead()'s headers go out over those set before, named as writeHead() was given them.
    const set = headersAsSent(this.raw);
    const headers = Object.keys(this.headArguments).length === 0 ? set : mergeHeaders(set, headersAsSent(this.raw, this.headArguments));
    return {
      status: this.status ?? this.raw.statusCode,
      headers,
      body: this.body(),
    };
  }

  /**
   * Puts the writers back by assignment: deleting the own properties instead would turn the
   * response into a dictionary-mode object in V8, slowing every later access to it.
   */
  private release(): void {
    this.released = true;
    Object.assign(this.raw, this.own);
  }
}
