/** The p-th percentile (0..100) of `values`, nearest rank. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Runs `operation` in `concurrency` loops until `done()` answers true; returns each run's milliseconds. */
export async function measureUntil(operation: () => Promise<void>, done: () => boolean, concurrency: number): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!done()) {
        const started = performance.now();
        await operation();
        latencies.push(performance.now() - started);
      }
    }),
  );
  return latencies;
}

/** Latency figures for a report line. */
export function summarize(latencies: number[]): string {
  const format = (value: number) => `${value.toFixed(1)} ms`;
  return `n=${latencies.length} p50=${format(percentile(latencies, 50))} p99=${format(percentile(latencies, 99))} max=${format(Math.max(...latencies))}`;
}
