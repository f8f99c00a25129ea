import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import type { BenchDatabase } from '../../test/support/bench-database.js';

// The CPU time the PostgreSQL server of the bench database uses, read from /proc where the server
// runs on this machine: undefined where it does not (its processes are not in this /proc).

/** The bench database's queries and name. */
type Database = Pick<BenchDatabase, 'query' | 'name'>;

/**
 * Starts reading the CPU time of the server's backends on the bench database; the returned
 * function gives the microseconds they used since.
 */
export async function startCpuReading(database: Database): Promise<() => Promise<number | undefined>> {
  const before = await readBackendsCpu(database);
  return async () => {
    const after = await readBackendsCpu(database);
    if (!before || !after) {
      return undefined;
    }
    let nanoseconds = 0;
    for (const [pid, used] of after) {
      nanoseconds += used - (before.get(pid) ?? 0);
    }
    return nanoseconds / 1000;
  };
}

/**
 * Starts reading the CPU time of the whole server: every process of its postmaster, those that
 * exit in between included (pgbench's backends do, at the end of its run), the WAL writer and
 * the checkpointer too. The returned function gives the microseconds used since.
 */
export async function startServerCpuReading(database: Database): Promise<() => Promise<number | undefined>> {
  const postmaster = await postmasterOf(database);
  const before = postmaster === undefined ? undefined : await readServerCpu(postmaster);
  return async () => {
    const after = postmaster === undefined ? undefined : await readServerCpu(postmaster);
    return before === undefined || after === undefined ? undefined : (after - before) / 1000;
  };
}

/**
 * The on-CPU time (ns, from /proc/<pid>/schedstat) of each client backend on database `name`, by
 * pid; undefined when one of them is not a PostgreSQL process of this machine. A backend that
 * exits between two readings takes its time with it: the app's pool keeps its connections open.
 */
async function readBackendsCpu({ query, name }: Database): Promise<Map<number, number> | undefined> {
  const rows = await query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
  );
  const used = new Map<number, number>();
  try {
    for (const { pid } of rows) {
      const [command, schedstat] = await Promise.all([readFile(`/proc/${pid}/cmdline`, 'utf8'), readFile(`/proc/${pid}/schedstat`, 'utf8')]);
      if (!command.startsWith('postgres') || !command.includes(name)) {
        return undefined;
      }
      used.set(pid, Number(schedstat.split(' ')[0]));
    }
  } catch {
    return undefined;
  }
  return used;
}

/** The fields of `/proc/<pid>/stat` after the command's closing parenthesis: state, ppid, … */
async function statFields(pid: number | string): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The postmaster of the server (its backend's parent), when that runs on this machine: the backend serves database `name`. */
async function postmasterOf({ query, name }: Database): Promise<number | undefined> {
  const rows = await query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  try {
    if (!(await readFile(`/proc/${rows[0].pid}/cmdline`, 'utf8')).includes(name)) {
      return undefined;
    }
    const [, parent] = await statFields(rows[0].pid);
    return (await readFile(`/proc/${parent}/comm`, 'utf8')).trim() === 'postgres' ? Number(parent) : undefined;
  } catch {
    return undefined;
  }
}

/** Clock ticks per second, the unit of the children's times in `/proc/<pid>/stat`. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/**
 * The on-CPU time (ns) of the server so far: the postmaster's and its live children's (from
 * `schedstat`), plus what its exited children used (the postmaster's `cutime` and `cstime`, in
 * clock ticks). The postmaster is read first, so a process that exits meanwhile is counted at most
 * once.
 */
async function readServerCpu(postmaster: number): Promise<number | undefined> {
  try {
    const [fields, schedstat] = await Promise.all([statFields(postmaster), readFile(`/proc/${postmaster}/schedstat`, 'utf8')]);
    let nanoseconds = Number(schedstat.split(' ')[0]) + ((Number(fields[13]) + Number(fields[14])) * 1e9) / CLOCK_TICKS;
    for (const entry of await readdir('/proc')) {
      if (/^\d+$/.test(entry)) {
        const child = await statFields(entry).catch(() => undefined);
        if (child?.[1] === String(postmaster)) {
          nanoseconds += Number((await readFile(`/proc/${entry}/schedstat`, 'utf8').catch(() => '0')).split(' ')[0]);
        }
      }
    }
    return nanoseconds;
  } catch {
    return undefined;
  }
}
