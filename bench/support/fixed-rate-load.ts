import { Agent, request } from 'node:http';
import type { HttpLoad } from './http-load.js';
import type { Measurement } from './measurement.js';
import { percentile } from '../../test/support/latency.js';

/** A stream of POSTs sent at a fixed rate, whether or not the earlier ones were answered. */
export interface FixedRateLoad extends Pick<HttpLoad, 'url' | 'request'> {
  /** Requests per second to send. */
  rate: number;
  seconds: number;
  /** Keep-alive connections the requests share at most; a request finds one free, or waits for one. */
  connections: number;
  /** Called at each 2xx answer, once it has been read whole: the request's number and the time (epoch ms, sub-millisecond). */
  onAnswer?: (n: number, answeredAt: number) => void;
}

/** How often the sender looks whether a request is due: Node's shortest timer. */
const TICK_MS = 1;
/** A request not answered by then fails the load. */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Sends `rate × seconds` requests, the n-th at n / rate seconds from the start (open loop: a slow
 * answer does not delay the next request), and measures each one's latency from the moment it is
 * written to the moment its whole answer is read, in microsecond resolution. The throughput is the
 * achieved rate: answers over the time from the first request to the last answer. Every answer
 * must be a 2xx, or the load fails.
 *
 * autocannon is not used here: its `overallRate` lets each connection send its share of a second
 * back to back at the start of that second (a burst at the saturation rate, then idle), and it
 * records latencies in whole milliseconds, with a correction for coordinated omission that, at a
 * set rate, adds samples as if every request were expected 1 ms after the previous one.
 */
export async function runFixedRateLoad(load: FixedRateLoad): Promise<Measurement> {
  const total = Math.round(load.rate * load.seconds);
  const agent = new Agent({ keepAlive: true, maxSockets: load.connections });
  const latenciesMs: number[] = [];
  const failures: string[] = [];
  const started = performance.now();
  let lastAnswer = started;
  try {
    await new Promise<void>((done) => {
      let sent = 0;
      let settled = 0;
      const settle = () => {
        lastAnswer = performance.now();
        if (++settled === total) {
          done();
        }
      };
      const send = (n: number) => {
        const { key, body } = load.request(n);
        const written = performance.now();
        const outgoing = request(
          load.url,
          { method: 'POST', agent, timeout: REQUEST_TIMEOUT_MS, headers: { 'content-type': 'application/json', 'idempotency-key': key } },
          (answer) => {
            answer.resume();
            answer.once('end', () => {
              latenciesMs.push(performance.now() - written);
              const status = answer.statusCode ?? 0;
              if (status < 200 || status >= 300) {
                failures.push(`HTTP ${status}`);
              } else {
                load.onAnswer?.(n, performance.timeOrigin + performance.now());
              }
              settle();
            });
          },
        );
        outgoing.once('timeout', () => outgoing.destroy(new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms`)));
        outgoing.once('error', (error) => {
          failures.push(error.message);
          settle();
        });
        outgoing.end(body);
      };
      const tick = () => {
        const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * load.rate) + 1);
        while (sent < due) {
          send(sent++);
        }
        if (sent < total) {
          setTimeout(tick, TICK_MS);
        }
      };
      tick();
    });
  } finally {
    agent.destroy();
  }
  if (failures.length > 0) {
    throw new Error(`${load.url}: ${failures.length} of ${total} requests failed at ${load.rate}/s, the first: ${failures[0]}`);
  }
  const seconds = (lastAnswer - started) / 1000;
  return { throughput: total / seconds, p50: percentile(latenciesMs, 50), p99: percentile(latenciesMs, 99), count: total, seconds };
}
