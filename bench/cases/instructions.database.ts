import { execFile, spawn } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startBenchApp } from '../../test/support/bench-processes.js';
import { createBenchSchema, initDataDir, newestServerBinaries, type ServerOwner, startServer } from '../../test/support/postgres-server.js';
import { type InstructionWindows, readDumps } from '../support/callgrind.js';
import type { ArmInstructions } from '../support/instruction-arms.js';
import { creditBody, runHttpLoad } from '../support/http-load.js';
import { median, round } from '../support/stats.js';
import type { BenchContext } from './bench-case.js';

const run = promisify(execFile);

/** One replayed transaction's counts, per transaction. */
export type ReplayedInstructions = Pick<ArmInstructions, 'windows' | 'median' | 'min' | 'max' | 'spreadPercent'>;

/** What the database side measured: the statements replayed, and their instructions per transaction. */
export interface DatabaseInstructions {
  readonly server: string;
  /** The statements of one first delivery as the server logged them, the app's parameters inlined. */
  readonly statements: { readonly plain: string[]; readonly idempotent: string[] };
  readonly transactions: { readonly warmup: number; readonly window: number };
  readonly plain: ReplayedInstructions;
  readonly idempotent: ReplayedInstructions;
  /** idempotent − plain, medians. */
  readonly added: number;
}

/**
 * The database side of a first delivery, in instructions: a private PostgreSQL (the machine's
 * newest, with initdb's defaults and `log_statement = 'all'`) logs the statements the bench app
 * (Express, natively) sends for one plain and one idempotent first delivery with a recorded
 * response; the server is stopped, and a single-user backend (`postgres --single`) on the same
 * data directory, under callgrind, replays each transaction from emptied tables: `warmup`
 * transactions, then `windows` windows of `window` transactions, each a new key and one of 1,000
 * accounts, as the app's would be (see `replayUnderCallgrind`).
 * The single-user backend prints each result row, which the wire protocol would not (about 6k
 * instructions a statement); both transactions pay it.
 */
export async function measureDatabaseInstructions(context: BenchContext, how: InstructionWindows): Promise<DatabaseInstructions | { skipped: string }> {
  const binaries = await newestServerBinaries();
  if (!binaries) {
    return { skipped: 'no PostgreSQL binaries under /usr/lib/postgresql' };
  }
  const { dataDir, owner } = await initDataDir(binaries, 'bench-instructions-pg-');
  const dumpDir = await mkdtemp(join(tmpdir(), 'bench-instructions-dumps-'));
  try {
    if (owner) {
      await chown(dumpDir, owner.uid, owner.gid);
    }
    const { stdout: version } = await run(join(binaries, 'postgres'), ['--version']);
    const statements = await captureStatements(context, binaries, dataDir, owner);
    const transactions = { warmup: how.preWarmup / 4, window: how.window };
    const replay = (arm: keyof typeof statements) => replayUnderCallgrind(binaries, dataDir, dumpDir, owner, statements[arm], how);
    const plain = await replay('plain');
    const idempotent = await replay('idempotent');
    const added = idempotent.median - plain.median;
    context.log(`database: plain ${plain.median} instr/transaction (${plain.windows.join(', ')}), idempotent ${idempotent.median} (${idempotent.windows.join(', ')}), +${added}`);
    return { server: `${version.trim()}, single-user backend`, statements, transactions, plain, idempotent, added };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
    await rm(dumpDir, { recursive: true, force: true });
  }
}

/** The key and account of the captured deliveries, which the replay varies per transaction. */
const CAPTURED_ACCOUNT = 'a0';

/**
 * Starts the server on `dataDir` with every statement logged, creates the bench schema, and logs
 * what the bench app sends for one first delivery of `POST /plain/credits` and one of
 * `POST /idempotent/credits` (each after a few unlogged ones, so the app's boot and first-use
 * queries are not in them). Returns each as statements with the app's parameters inlined.
 */
async function captureStatements(
  { runtimes }: BenchContext,
  binaries: string,
  dataDir: string,
  owner: ServerOwner,
): Promise<{ plain: string[]; idempotent: string[] }> {
  let log = '';
  const server = await startServer(binaries, dataDir, owner, ['log_statement=all', 'log_line_prefix=@@ '], (chunk) => (log += chunk));
  try {
    await createBenchSchema(server.url);
    const app = await startBenchApp('express', server.url, runtimes.headline);
    try {
      const key = `c16-database-${Date.now().toString(36)}`;
      const capture = async (route: 'plain' | 'idempotent') => {
        const post = (n: number, label: string) =>
          runHttpLoad({ url: `${app.baseUrl}/${route}/credits`, connections: 1, amount: n, request: (i) => ({ key: `${label}-${i}`, body: creditBody(0) }) });
        await post(20, `${key}-${route}-warm`);
        const from = log.length;
        await post(1, `${key}-${route}`);
        const statements = await loggedStatements(() => log.slice(from));
        return statements.map((statement) => statement.replaceAll(`${key}-${route}-0`, KEY_PLACEHOLDER));
      };
      return { plain: await capture('plain'), idempotent: await capture('idempotent') };
    } finally {
      await app.stop();
    }
  } finally {
    await server.stop();
  }
}

/** Where a replayed transaction puts its own key. */
const KEY_PLACEHOLDER = '{{key}}';

/** The statements logged in `log()` up to the COMMIT that ends the delivery, waiting for the server to write them. */
async function loggedStatements(log: () => string): Promise<string[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const statements = parseLog(log());
    const commit = statements.findIndex((statement) => /\bCOMMIT\s*;?\s*$/i.test(statement));
    if (commit >= 0) {
      return statements.slice(0, commit + 1);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`the server logged no COMMIT for the delivery:\n${log()}`);
}

/**
 * The statements of a server log (`log_line_prefix = '@@ '`): `statement: <sql>` as it is,
 * `execute <name>: <sql>` with the `parameters: $1 = '…'` of its DETAIL line inlined as literals.
 */
function parseLog(log: string): string[] {
  const entries = log.split(/^@@ /m).filter(Boolean);
  const statements: string[] = [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i].replace(/\n\t/g, '\n').trimEnd();
    const simple = /^LOG:\s+statement: ([\s\S]*)$/.exec(entry);
    const extended = /^LOG:\s+execute [^:]*: ([\s\S]*)$/.exec(entry);
    if (simple) {
      statements.push(simple[1]);
    } else if (extended) {
      const detail = /^DETAIL:\s+parameters: ([\s\S]*)$/.exec(entries[i + 1]?.replace(/\n\t/g, '\n').trimEnd() ?? '');
      const values = new Map<string, string>();
      for (const [, n, value] of detail?.[1].matchAll(/\$(\d+) = (NULL|'(?:[^']|'')*')/g) ?? []) {
        values.set(n, value);
      }
      statements.push(extended[1].replace(/\$(\d+)\b/g, (parameter, n: string) => values.get(n) ?? parameter));
    }
  }
  return statements;
}

/**
 * A single-user backend on `dataDir` under callgrind, its tables emptied, runs `statements` as
 * transactions with a new key each (`KEY_PLACEHOLDER`) and one of 1,000 accounts in turn:
 * `preWarmup / 4` not counted, then `windows` counted windows of `window`, a `CHECKPOINT` after
 * each. callgrind dumps its counters as each checkpoint starts and counts nothing inside one
 * (`--dump-before` and `--toggle-collect` of `CreateCheckPoint`), so each dump is one window
 * and each window starts, as the first does, from a checkpoint. Returns instructions per transaction.
 */
async function replayUnderCallgrind(binaries: string, dataDir: string, dumpDir: string, owner: ServerOwner, statements: string[], how: InstructionWindows): Promise<ReplayedInstructions> {
  const callgrind = [
    '--tool=callgrind',
    '--quiet',
    '--dump-before=CreateCheckPoint',
    '--toggle-collect=CreateCheckPoint',
    // After --toggle-collect, which would otherwise count only inside the function.
    '--collect-atstart=yes',
    `--callgrind-out-file=${join(dumpDir, 'callgrind.out.%p')}`,
  ];
  const backend = spawn('valgrind', [...callgrind, join(binaries, 'postgres'), '--single', '-j', '-D', dataDir, 'postgres'], { ...owner, stdio: ['pipe', 'ignore', 'pipe'] });
  let errors = '';
  backend.stderr.on('data', (chunk) => (errors += chunk));
  const exited = new Promise<number | null>((done) => backend.once('exit', done));
  let sent = 0;
  const transactions = (count: number) =>
    Array.from({ length: count }, () => {
      const n = sent++;
      return statements.map((statement) => statement.replaceAll(KEY_PLACEHOLDER, `replayed-${n}`).replaceAll(`'${CAPTURED_ACCOUNT}'`, `'a${n % 1000}'`));
    }).flat();
  const inputs = [
    'TRUNCATE ledger_entries, accounts, processed_messages',
    'CHECKPOINT',
    ...transactions(how.preWarmup / 4),
    'CHECKPOINT',
    ...Array.from({ length: how.windows }, () => [...transactions(how.window), 'CHECKPOINT']).flat(),
  ];
  // -j: each input ends with a semicolon and an empty line; the backend exits at the end of its input.
  backend.stdin.end(inputs.map((statement) => `${statement.replace(/;\s*$/, '')};\n\n`).join(''));
  const code = await exited;
  if (code !== 0 || /\bERROR:/.test(errors)) {
    throw new Error(`the single-user backend exited with ${code}:\n${errors.slice(-4000)}`);
  }
  // Dumps: the start and the TRUNCATE, the warm-up, each window, then the shutdown's checkpoint.
  const dumps = await readDumps(dumpDir, backend.pid as number);
  if (dumps.length !== how.windows + 3) {
    throw new Error(`callgrind dumped the single-user backend ${dumps.length} times, not ${how.windows + 3}`);
  }
  const windows = dumps.slice(2, -1).map((instructions) => Math.round(instructions / how.window));
  const middle = median(windows);
  const [min, max] = [Math.min(...windows), Math.max(...windows)];
  return { windows, median: Math.round(middle), min, max, spreadPercent: round((100 * (max - min)) / middle, 1) };
}
