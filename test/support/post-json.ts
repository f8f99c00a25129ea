import { request } from 'node:http';

/** Request headers; a list of values sends the header once per value, as fetch cannot (it joins them). */
export type RequestHeaders = Record<string, string | string[]>;

/** An answer as it came over the wire. */
export interface WireAnswer {
  status: number;
  /** The headers, looked up by any casing (as fetch's). */
  headers: Headers;
  /** The header lines as received, `[name, value, name, value, ...]`, names in the casing they were sent with. */
  rawHeaders: string[];
  bytes: Buffer;
  json: Record<string, unknown> | undefined;
}

/**
 * A JSON POST over node:http, answered with its raw bytes and its header lines as sent, to compare
 * a replay with the first answer byte for byte, header names and framing (Content-Length or
 * chunked) included.
 */
export function postJson(url: string, body: unknown, headers: RequestHeaders = {}): Promise<WireAnswer> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(payload.length), ...headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const received = new Headers();
          for (let index = 0; index + 1 < response.rawHeaders.length; index += 2) {
            received.append(response.rawHeaders[index], response.rawHeaders[index + 1]);
          }
          let json: Record<string, unknown> | undefined;
          try {
            json = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
          } catch {
            json = undefined;
          }
          resolve({ status: response.statusCode!, headers: received, rawHeaders: response.rawHeaders, bytes, json });
        });
      },
    );
    sent.on('error', reject);
    sent.end(payload);
  });
}

/** Header lines that differ between any two answers of one server (or mark a replay), left out of comparisons. */
const PER_ANSWER_HEADERS = new Set(['date', 'connection', 'keep-alive', 'idempotent-replayed']);

/** The header lines of an answer, `name: value` with names as sent, but those every answer has its own of. */
export function wireHeaders(answer: WireAnswer): string[] {
  const lines: string[] = [];
  for (let index = 0; index + 1 < answer.rawHeaders.length; index += 2) {
    if (!PER_ANSWER_HEADERS.has(answer.rawHeaders[index].toLowerCase())) {
      lines.push(`${answer.rawHeaders[index]}: ${answer.rawHeaders[index + 1]}`);
    }
  }
  return lines.sort();
}
