import autocannon from 'autocannon';
import type { CreditRequest } from '../../apps/demo-api/src/credits/credit-request.js';
import type { BenchAppProcess } from '../../test/support/bench-processes.js';
import type { Measurement } from './measurement.js';

/** A stream of POSTs with an `Idempotency-Key` header, one key and body per request. */
export interface HttpLoad {
  /** The full URL of the endpoint. */
  url: string;
  connections: number;
  /** Run for this many seconds, or else until `amount` requests are done. */
  seconds?: number;
  amount?: number;
  /** Stop as soon as this settles (within 0.1 s), if before `seconds` are up. */
  until?: Promise<unknown>;
  /** Seconds a request may take before it counts as an error (autocannon's default: 10). */
  timeout?: number;
  /** The key and JSON body of the load's n-th request. */
  request(n: number): { key: string; body: string };
}

/**
 * Runs `load` with autocannon in this process and measures it. Every request must succeed (2xx):
 * a measurement that includes errors would not be one, so they fail the case.
 */
export async function runHttpLoad(load: HttpLoad): Promise<Measurement> {
  let n = 0;
  const started = performance.now();
  const run = autocannon({
    url: load.url,
    connections: load.connections,
    ...(load.amount === undefined ? { duration: load.seconds } : { amount: load.amount }),
    ...(load.timeout === undefined ? {} : { timeout: load.timeout }),
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request) => {
          const { key, body } = load.request(n++);
          return { ...request, headers: { ...request.headers, 'idempotency-key': key }, body };
        },
      },
    ],
    // autocannon looks at a stop() only when it takes a sample: every second by default.
    ...(load.until ? { sampleInt: 100 } : {}),
  });
  const stop = () => run.stop();
  load.until?.then(stop, stop);
  const result = await run;
  if (result.errors > 0 || result.non2xx > 0) {
    throw new Error(
      `${load.url}: ${result.errors} connection errors (${result.timeouts} timeouts), ${result.non2xx} non-2xx answers; ` +
        `status codes ${JSON.stringify(result.statusCodeStats)}`,
    );
  }
  // autocannon rounds its own duration to whole seconds when it runs an amount of requests.
  const seconds = (performance.now() - started) / 1000;
  return { throughput: result['2xx'] / seconds, p50: result.latency.p50, p99: result.latency.p99, count: result['2xx'], seconds };
}

/** `runHttpLoad` against an endpoint of the bench app, with the app's CPU time per request. */
export function runAppLoad(app: BenchAppProcess, path: string, load: Omit<HttpLoad, 'url'>): Promise<Measurement> {
  return withAppCpu(app, () => runHttpLoad({ ...load, url: `${app.baseUrl}${path}` }));
}

/** Runs `measure`, a load on `app`, and adds the app's CPU time per request to its measurement. */
export async function withAppCpu(app: BenchAppProcess, measure: () => Promise<Measurement>): Promise<Measurement> {
  const before = await app.usage();
  const measurement = await measure();
  const after = await app.usage();
  return { ...measurement, appCpuMicros: (after.cpuMicros - before.cpuMicros) / measurement.count };
}

/** The n-th credit of a load: 1,000 accounts in turn, so no row is a hot spot. */
export function nthCredit(n: number): CreditRequest {
  return { account: `a${n % 1000}`, cents: 1 + (n % 100) };
}

/** The JSON body of the n-th credit of a load. */
export function creditBody(n: number): string {
  return JSON.stringify(nthCredit(n));
}

/** Requests with keys never sent before (`<label>-<n>`): every one is a first delivery. */
export function uniqueCredits(label: string): HttpLoad['request'] {
  return (n) => ({ key: `${label}-${n}`, body: creditBody(n) });
}
