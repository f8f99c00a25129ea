import type { ChurnResult, StorageParameters } from './churn.js';
import type { StorageFigures } from './storage.js';
import type { ClaimLoadResult } from './webhook-claims.js';
import type { WalWindow } from './wal-window.js';
import type { Machine } from '../support/results.js';

/** The load the sizing is for: 10,000 messages a second, each kept 7 days. */
export const TARGET = { messagesPerSecond: 10_000, retentionDays: 7 } as const;
export const TARGET_ROWS = TARGET.messagesPerSecond * TARGET.retentionDays * 86_400;

/** What the run measured, as `bench/results/sizing-<date>.json` holds it. */
export interface SizingResults {
  date: string;
  quick: boolean;
  command: string;
  machine: Machine & { loadAverage: { before: number; after: number } };
  server: { source: 'DATABASE_URL' | 'default'; version: string; settings: Record<string, string> };
  storage: StorageFigures;
  claims: ClaimLoadResult & { wal: WalWindow; walBytesPerClaim: number; fullPageImagesPerClaim: number; growthBytesPerClaim: number; hotUpdateShare: number };
  purge: {
    batchSize: number;
    rows: number;
    batches: number;
    durationMs: number;
    rowsPerSecond: number;
    headroom: number;
    wal: WalWindow;
    walBytesPerRow: number;
    vacuum: { seconds: number; wal: WalWindow; walBytesPerRow: number };
  };
  churn: {
    server: { source: string; version: string; autovacuumNaptime: string };
    rate: number;
    defaults: ChurnResult;
    recommended: ChurnResult;
  };
  /** The per-table parameters for the target's rate (the churn's recommended arm used its own rate's). */
  recommendedParameters: StorageParameters;
  connections: { holdMsMean: number; claimOnly: number; perHandlerMillisecond: number };
  extrapolation: Extrapolation;
  totalSeconds: number;
}

/** The figures at the target, from the measured ones. */
export interface Extrapolation {
  rows: number;
  storageBytes: { table: number; indexes: Record<string, number>; total: number };
  walBytesPerClaimAtScale: number;
  /** Primary-key full-page images per claim at the target. */
  imagesPerClaimAtScale: number;
  /** WAL per claim when the claims land in a partition of one day's or one hour's messages. */
  walBytesPerClaimPartitioned: { daily: number; hourly: number };
  walBytesPerDay: { claims: number; purge: number; vacuum: number; total: number };
  purgeRowsPerSecondNeeded: number;
}

const DAY = 86_400;

/**
 * Scales the 10-million-row figures to the target. Storage grows with the rows. The WAL of a
 * claim does not: each claim's random key lands on a primary-key leaf, and the first change to a
 * page after a checkpoint writes the whole page to the WAL (full_page_writes). Of L leaves, C
 * claims between two checkpoints touch L(1 - e^(-C/L)); at the target L is tens of millions and
 * nearly every claim writes an image. Its WAL is then the measured bytes without images, plus that
 * share of the measured average image. C assumes timed checkpoints (`checkpointTimeoutSeconds`),
 * with max_wal_size raised so that no checkpoint comes sooner. In a table partitioned by the
 * messages' time, the claims land in the current partition's smaller index: fewer images.
 */
export function extrapolate(results: Pick<SizingResults, 'storage' | 'claims' | 'purge'>, checkpointTimeoutSeconds: number): Extrapolation {
  const { storage, claims, purge } = results;
  const scale = (bytesPerRow: number) => Math.round(bytesPerRow * TARGET_ROWS);
  const indexes = Object.fromEntries(Object.entries(storage.bytesPerRow.indexes).map(([name, perRow]) => [name, scale(perRow)]));
  const imageBytes = claims.wal.fullPageImageBytes ?? claims.wal.fullPageImages * PAGE_BYTES;
  const imageSize = claims.wal.fullPageImages === 0 ? PAGE_BYTES : imageBytes / claims.wal.fullPageImages;
  const withoutImages = (claims.wal.bytes - imageBytes) / claims.claims;
  const keyBytesPerRow = Object.entries(storage.bytesPerRow.indexes).find(([name]) => name.endsWith('_pkey'))?.[1] ?? 0;
  const claimsPerCheckpoint = TARGET.messagesPerSecond * checkpointTimeoutSeconds;
  // The claims land in an index of `rows` rows: the whole table's, or the current partition's.
  const walPerClaim = (rows: number) => {
    const leaves = (keyBytesPerRow * rows) / PAGE_BYTES;
    const imagesPerClaim = (leaves / claimsPerCheckpoint) * (1 - Math.exp(-claimsPerCheckpoint / leaves));
    return { imagesPerClaim, bytes: Math.round(withoutImages + imagesPerClaim * imageSize) };
  };
  const { imagesPerClaim, bytes: walBytesPerClaimAtScale } = walPerClaim(TARGET_ROWS);
  const partitionedBy = (seconds: number) => walPerClaim(TARGET.messagesPerSecond * seconds).bytes;
  const perDay = TARGET.messagesPerSecond * DAY;
  const walPerDay = {
    claims: walBytesPerClaimAtScale * perDay,
    purge: Math.round(purge.walBytesPerRow * perDay),
    vacuum: Math.round(purge.vacuum.walBytesPerRow * perDay),
  };
  return {
    rows: TARGET_ROWS,
    storageBytes: { table: scale(storage.bytesPerRow.table), indexes, total: scale(storage.bytesPerRow.total) },
    walBytesPerClaimAtScale,
    imagesPerClaimAtScale: imagesPerClaim,
    walBytesPerClaimPartitioned: { daily: partitionedBy(DAY), hourly: partitionedBy(3600) },
    walBytesPerDay: { ...walPerDay, total: walPerDay.claims + walPerDay.purge + walPerDay.vacuum },
    purgeRowsPerSecondNeeded: TARGET.messagesPerSecond,
  };
}

const PAGE_BYTES = 8192;
const GB = 1e9;
const TB = 1e12;

function bytes(value: number): string {
  if (value >= TB) {
    return `${(value / TB).toFixed(2)} TB`;
  }
  if (value >= GB) {
    return `${(value / GB).toFixed(1)} GB`;
  }
  return `${(value / 1e6).toFixed(1)} MB`;
}

const count = (value: number, digits = 0) => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The sizing as a Markdown table: what was measured at 10 million rows, and what it makes at the target. */
export function sizingTable(results: SizingResults): string {
  const { storage, claims, purge, churn, connections, extrapolation: at } = results;
  const indexes = Object.keys(storage.indexBytes);
  const rows: [string, string, string][] = [
    ['rows', count(storage.rows), count(at.rows)],
    ['bytes per row: table (heap, TOAST, maps)', count(storage.bytesPerRow.table, 1), bytes(at.storageBytes.table)],
    ...indexes.map((name): [string, string, string] => [`bytes per row: index ${name}`, count(storage.bytesPerRow.indexes[name], 1), bytes(at.storageBytes.indexes[name])]),
    ['bytes per row: total', count(storage.bytesPerRow.total, 1), bytes(at.storageBytes.total)],
    [
      'WAL per claim (claim + recorded response + COMMIT)',
      `${count(claims.walBytesPerClaim)} B (${count(claims.fullPageImagesPerClaim, 2)} full-page images)`,
      `${count(at.walBytesPerClaimAtScale)} B (${count(at.imagesPerClaimAtScale, 2)} primary-key images)`,
    ],
    [
      'WAL per claim, partitioned by message time: daily / hourly',
      '',
      `${count(at.walBytesPerClaimPartitioned.daily)} B / ${count(at.walBytesPerClaimPartitioned.hourly)} B`,
    ],
    ['WAL per purged row: the purge', `${count(purge.walBytesPerRow, 1)} B`, ''],
    ['WAL per purged row: the vacuum after it', `${count(purge.vacuum.walBytesPerRow, 1)} B`, ''],
    ['WAL per day', '', `${bytes(at.walBytesPerDay.total)} (claims ${bytes(at.walBytesPerDay.claims)}, purge ${bytes(at.walBytesPerDay.purge + at.walBytesPerDay.vacuum)})`],
    [
      `purge rate (batch ${count(purge.batchSize)}, alone)`,
      `${count(purge.rowsPerSecond)} rows/s`,
      `needs ${count(at.purgeRowsPerSecondNeeded)} rows/s: headroom ${purge.headroom.toFixed(1)}×`,
    ],
    [
      `purge rate during churn (${count(churn.rate)} claims/s)`,
      `${count(churn.recommended.purgeRowsPerSecond)} rows/s`,
      '',
    ],
    [
      'connection held per claim (mean, p99)',
      `${claims.holdMs.mean.toFixed(2)} / ${claims.holdMs.p99.toFixed(2)} ms at ${count(claims.claimsPerSecond)} claims/s`,
      `${count(connections.claimOnly, 1)} connections busy + ${count(connections.perHandlerMillisecond)} per ms of handler`,
    ],
    [
      `dead tuples under churn, defaults: max / final`,
      `${count(churn.defaults.maxDeadTuples)} / ${count(churn.defaults.finalDeadTuples)} (${churn.defaults.autovacuums} autovacuums)`,
      `defaults: first autovacuum after ${count(0.2 * at.rows)} dead rows`,
    ],
    [
      `dead tuples under churn, recommended: max / final`,
      `${count(churn.recommended.maxDeadTuples)} / ${count(churn.recommended.finalDeadTuples)} (${churn.recommended.autovacuums} autovacuums)`,
      `autovacuum every ${count(results.recommendedParameters.autovacuum_vacuum_threshold)} dead rows`,
    ],
  ];
  return [
    `| | measured, ${count(storage.rows)} rows | at ${count(TARGET.messagesPerSecond)}/s × ${TARGET.retentionDays} days |`,
    '| --- | --- | --- |',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}
