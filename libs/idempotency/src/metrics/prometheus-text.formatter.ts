import type { IdempotencyMetricsSnapshot } from './idempotency-metrics.service.js';
import type { DeliveryOutcome } from './delivery-outcome.js';

const OUTCOMES: readonly DeliveryOutcome[] = ['processed', 'duplicate', 'failed', 'rejected'];

/** The snapshot in the Prometheus text exposition format, version 0.0.4. */
export function toPrometheusText(snapshot: IdempotencyMetricsSnapshot): string {
  const { purge } = snapshot;
  const lines = [
    ...family('idempotency_deliveries_total', 'counter', 'Deliveries to idempotent handlers by consumer, sender and outcome.'),
    ...snapshot.deliveries.flatMap((counts) =>
      OUTCOMES.map((outcome) => sample('idempotency_deliveries_total', { consumer: counts.consumer, sender: counts.sender, outcome }, counts[outcome])),
    ),
    ...family('idempotency_purge_runs_total', 'counter', "This instance's purge runs by outcome."),
    ...Object.entries(purge.runs).map(([outcome, runs]) => sample('idempotency_purge_runs_total', { outcome }, runs)),
    ...family('idempotency_purged_rows_total', 'counter', "Expired message ids deleted by this instance's purge."),
    sample('idempotency_purged_rows_total', {}, purge.rows),
    ...family('idempotency_purge_last_duration_seconds', 'gauge', "Duration of this instance's last purge run."),
    ...(purge.lastRun ? [sample('idempotency_purge_last_duration_seconds', {}, purge.lastRun.durationMs / 1000)] : []),
    ...family('idempotency_purge_last_success_timestamp_seconds', 'gauge', "When this instance's last successful purge ended."),
    ...(purge.lastSuccessAt ? [sample('idempotency_purge_last_success_timestamp_seconds', {}, purge.lastSuccessAt.getTime() / 1000)] : []),
  ];
  return `${lines.join('\n')}\n`;
}

function family(name: string, type: 'counter' | 'gauge', help: string): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
}

function sample(name: string, labels: Record<string, string>, value: number): string {
  const text = Object.entries(labels)
    .map(([label, labelValue]) => `${label}="${labelValue.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',');
  return `${name}${text ? `{${text}}` : ''} ${value}`;
}
