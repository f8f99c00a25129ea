/** What the app process has used so far. */
export interface ProcessUsage {
  /** Resident set size and used heap, in bytes. */
  rss: number;
  heapUsed: number;
  /** User plus system CPU time, in microseconds. */
  cpuMicros: number;
  /** Whether a full garbage collection ran just before the memory was read. */
  collected: boolean;
  /** The spans the process's tracer provider has exported, where the bench registered one (case 11). */
  spans?: number;
}

/**
 * This process's usage for a bench app's `GET /usage`; `gc === 'true'` first runs a full garbage
 * collection, which the runner's `--expose-gc` allows.
 */
export function processUsage(gc: string | undefined): ProcessUsage {
  const collect = gc === 'true' ? (globalThis as { gc?: () => void }).gc : undefined;
  collect?.();
  const { rss, heapUsed } = process.memoryUsage();
  const { user, system } = process.cpuUsage();
  return { rss, heapUsed, cpuMicros: user + system, collected: collect !== undefined };
}
