// The part of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  interface RawRequest {
    headers?: Record<string, string>;
    body?: string;
  }

  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    requests?: { setupRequest?: (request: RawRequest) => RawRequest }[];
    /** Milliseconds between samples; a `stop()` takes effect at the next one. */
    sampleInt?: number;
    /** Seconds before a request counts as timed out (and is sent again). */
    timeout?: number;
  }

  interface Result {
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    latency: { p50: number; p99: number };
    statusCodeStats: Record<string, { count: number }>;
  }

  /** A running load: a promise of its result, which `stop()` ends early. */
  interface Run extends Promise<Result> {
    stop(): void;
  }

  function autocannon(options: Options): Run;
  export default autocannon;
}
