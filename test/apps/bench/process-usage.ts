import { GCProfiler, getHeapStatistics } from 'node:v8';

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
  /** The bytes allocated on the V8 heap since the first reading; not counted in a process under a tool (case 16's counted runs). */
  allocatedBytes?: number;
}

/**
 * The bytes this process allocated on the V8 heap since the first call, read from the heap's use
 * before and after each garbage collection (a `GCProfiler`, started anew at each call) and now.
 */
const allocations = {
  profiler: undefined as GCProfiler | undefined,
  total: 0,
  /** The heap's use at the last point counted. */
  used: 0,
};

function allocatedBytes(): number {
  const { statistics } = allocations.profiler?.stop() ?? { statistics: [] };
  for (const { beforeGC, afterGC } of statistics) {
    allocations.total += beforeGC.heapStatistics.usedHeapSize - allocations.used;
    allocations.used = afterGC.heapStatistics.usedHeapSize;
  }
  const used = getHeapStatistics().used_heap_size;
  allocations.total += allocations.profiler ? used - allocations.used : 0;
  allocations.used = used;
  allocations.profiler = new GCProfiler();
  allocations.profiler.start();
  return allocations.total;
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
  const counted = process.env.BENCH_UNDER_TOOL === '1' ? {} : { allocatedBytes: allocatedBytes() };
  return { rss, heapUsed, cpuMicros: user + system, collected: collect !== undefined, ...counted };
}
