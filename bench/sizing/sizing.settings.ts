import { DEFAULT_TABLE_NAME } from 'nestjs-idempotent-consumer';

/** The server the sizing uses unless DATABASE_URL names another: this machine's PostgreSQL. */
export const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** The processed-messages table, as the shipped migration names it. */
export const TABLE = DEFAULT_TABLE_NAME;

/** How big and how long the sizing measures; see `npm run bench:sizing -- --quick`. */
export interface SizingSettings {
  /** Rows in the measured table. */
  readonly rows: number;
  /** Of those, rows already expired, for the purge to delete. */
  readonly expiredRows: number;
  /** First deliveries claimed through the module's statements, for WAL and connection time. */
  readonly claims: number;
  /** Claims in flight at once (the machine has two cores). */
  readonly concurrency: number;
  /** Rows of the table under churn, the claims in flight at once, and the churn's arrival rate and length per arm. */
  readonly churnRows: number;
  readonly churnConcurrency: number;
  readonly churnRate: number;
  readonly churnSeconds: number;
  readonly sampleSeconds: number;
  readonly quick: boolean;
}

/**
 * The published run: 10 million rows, 100,000 claims, and 230 s of churn per arm (three purge
 * runs) on 2 million rows (20 % of them, the default trigger, is far from reached either way).
 */
const FULL: SizingSettings = {
  rows: 10_000_000,
  expiredRows: 2_000_000,
  claims: 100_000,
  concurrency: 4,
  churnRows: 2_000_000,
  churnConcurrency: 8,
  churnRate: 1_000,
  churnSeconds: 230,
  sampleSeconds: 5,
  quick: false,
};

/** A trial of the script in a few minutes; its figures are not the published ones. */
const QUICK: SizingSettings = {
  ...FULL,
  rows: 500_000,
  expiredRows: 100_000,
  claims: 5_000,
  churnRows: 500_000,
  churnRate: 300,
  churnSeconds: 75,
  quick: true,
};

export function parseSizingArguments(args: string[]): SizingSettings {
  if (args.length === 0) {
    return FULL;
  }
  if (args.length === 1 && args[0] === '--quick') {
    return QUICK;
  }
  throw new Error(`unknown arguments '${args.join(' ')}': npm run bench:sizing -- [--quick]`);
}
