import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchAppProcess, PLATFORMS } from '../../test/support/bench-processes.js';
import type { BenchDatabase } from '../../test/support/bench-database.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { type Arm, interleave, summarize, withDatabaseCpu } from '../support/measurement.js';
import { findPgbench, runPgbench } from '../support/pgbench.js';
import { difference, round } from '../support/stats.js';
import { type BenchCase, type CaseReport, CaseSkipped, emptyReport } from './bench-case.js';
import { IDEMPOTENT_REQUEST_SQL, PLAIN_TRANSACTION_SQL } from './database-limit.scripts.js';

/**
 * pgbench clients for the database's own cost of the claim and the record: one per core, so that
 * no client waits for a core and no backend for a lock held by one that was preempted.
 */
const UNCONTENDED_CLIENTS = cpus().length;

/**
 * Case 3: pgbench sending the statements of the idempotent request, with as many clients as the
 * HTTP cases have connections, interleaved with the idempotent app on each platform: the app's
 * throughput as a fraction of what the database alone sustains on this machine. pgbench also
 * sends the plain transaction's statements, which shows what the claim costs the database itself:
 * the whole server's CPU per transaction, with as many clients as the HTTP cases have connections
 * and with one client per core.
 */
export const databaseLimit: BenchCase = {
  id: 3,
  title: 'Database limit',
  async run({ settings, database, startApp, log }): Promise<CaseReport> {
    const pgbench = findPgbench();
    if (!pgbench) {
      throw new CaseSkipped('pgbench is not installed (Debian: apt-get install postgresql-client); set BENCH_PGBENCH to use another');
    }
    const report = emptyReport();
    const scriptDir = await mkdtemp(join(tmpdir(), 'idempotency-bench-scripts-'));
    const apps: BenchAppProcess[] = [];
    try {
      const scripts = { idempotent: IDEMPOTENT_REQUEST_SQL, plain: PLAIN_TRANSACTION_SQL };
      for (const [name, sql] of Object.entries(scripts)) {
        await writeFile(join(scriptDir, `${name}.sql`), sql);
      }
      const pgbenchArm = (name: keyof typeof scripts, clients: number): Arm => ({
        name: `pgbench ${name}, ${clients} clients`,
        measure: (_r, seconds) =>
          withDatabaseCpu(database, () => runPgbench(pgbench, { url: database.url, scriptPath: join(scriptDir, `${name}.sql`), clients, seconds }), 'server'),
      });
      const idempotentSql = pgbenchArm('idempotent', settings.connections);
      const plainSql = pgbenchArm('plain', settings.connections);
      const uncontended = [pgbenchArm('idempotent', UNCONTENDED_CLIENTS), pgbenchArm('plain', UNCONTENDED_CLIENTS)];
      const appArms: Arm[] = [];
      for (const platform of PLATFORMS) {
        const app = await startApp(platform);
        apps.push(app);
        appArms.push({
          name: `${platform} idempotent`,
          measure: (r, seconds) =>
            withDatabaseCpu(
              database,
              () =>
                runAppLoad(app, '/idempotent/credits', {
                  connections: settings.connections,
                  seconds,
                  request: uniqueCredits(`c3-${platform}-${r}`),
                }),
              'server',
            ),
        });
      }
      const rounds = await interleave([idempotentSql, plainSql, ...uncontended, ...appArms], { ...settings, log });
      await expectEveryClaimRecorded(database);
      const limit = summarize(rounds[idempotentSql.name]);
      const plainLimit = summarize(rounds[plainSql.name]);
      const claimCost = round(limit.throughput / plainLimit.throughput, 3);
      const fractions: Record<string, number> = {};
      const [uncontendedLimit, uncontendedPlain] = uncontended.map((arm) => summarize(rounds[arm.name]));
      const addedDatabaseCpu = {
        contended: difference(limit.databaseCpuMicros, plainLimit.databaseCpuMicros),
        uncontended: difference(uncontendedLimit.databaseCpuMicros, uncontendedPlain.databaseCpuMicros),
      };
      const added = (micros: number | undefined) => (micros === undefined ? [] : [`database CPU +${micros} µs per transaction`]);
      report.rows.push(
        {
          variant: `pgbench, idempotent request statements, ${settings.connections} clients`,
          ...limit,
          figure: [`${claimCost.toFixed(2)} × pgbench plain`, ...added(addedDatabaseCpu.contended)].join(', '),
        },
        { variant: `pgbench, plain transaction statements, ${settings.connections} clients`, ...plainLimit },
        {
          variant: `pgbench, idempotent request statements, ${UNCONTENDED_CLIENTS} clients`,
          ...uncontendedLimit,
          figure: added(addedDatabaseCpu.uncontended).join(''),
        },
        { variant: `pgbench, plain transaction statements, ${UNCONTENDED_CLIENTS} clients`, ...uncontendedPlain },
      );
      for (const arm of appArms) {
        const app = summarize(rounds[arm.name]);
        fractions[arm.name] = round(app.throughput / limit.throughput, 3);
        report.rows.push({ variant: arm.name.replace(' ', ', '), ...app, figure: `${fractions[arm.name].toFixed(2)} of pgbench idempotent` });
      }
      report.details = {
        pgbench: pgbench.version,
        scripts: { idempotent: IDEMPOTENT_REQUEST_SQL, plain: PLAIN_TRANSACTION_SQL },
        rounds,
        fractions,
        idempotentOverPlainDatabaseAlone: claimCost,
        addedDatabaseCpuByClients: { [settings.connections]: addedDatabaseCpu.contended, [UNCONTENDED_CLIENTS]: addedDatabaseCpu.uncontended },
      };
      report.chart.push({
        title: '3 · database limit (pgbench: the same statements, no app)',
        unit: 'tx/s',
        bars: [
          { label: 'pgbench idempotent', value: limit.throughput },
          ...appArms.map((arm) => ({ label: `app ${arm.name}`, value: summarize(rounds[arm.name]).throughput })),
          { label: 'pgbench plain', value: plainLimit.throughput },
        ],
        note:
          `app / database alone: ${Object.entries(fractions)
            .map(([name, fraction]) => `${name.split(' ')[0]} ${fraction.toFixed(2)}`)
            .join(', ')}` + ` · database alone, idempotent / plain: ${claimCost.toFixed(2)}`,
      });
    } finally {
      await Promise.all(apps.map((app) => app.stop()));
      await rm(scriptDir, { recursive: true, force: true });
    }
    return report;
  },
};

/** pgbench's claims each got their response recorded: the script did what the library does. */
async function expectEveryClaimRecorded(database: BenchDatabase): Promise<void> {
  const [{ claims, recorded }] = await database.query<{ claims: string; recorded: string }>(
    `SELECT count(*) AS claims, count(response_status) AS recorded FROM processed_messages WHERE message_id LIKE 'pgbench-%'`,
  );
  if (Number(claims) === 0 || claims !== recorded) {
    throw new Error(`the pgbench script left ${claims} claims of which ${recorded} have a recorded response`);
  }
}
