import type { INestApplication } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Registry } from 'prom-client';
import { schemaSql } from 'nestjs-idempotent-consumer';
import { parse } from 'yaml';
import { FixtureController, FixtureModule } from './fixtures/fixture.module.js';
import { post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const DOCS = resolve('libs/idempotency/docs');

/** PromQL words that are not metric names. */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: parsed just enough for that. Strings, label
 * matchers, range selectors and the label lists of `by (...)` and friends are dropped; a word
 * followed by `(` is a function; what is left that is not a keyword or a number is a metric name.
 */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const after = stripped.slice(match.index + word.length).trimStart();
    const before = stripped[match.index - 1];
    if (after.startsWith('(') || KEYWORDS.has(word.toLowerCase()) || (before !== undefined && /[0-9.]/.test(before))) {
      continue;
    }
    names.add(word);
  }
  return [...names];
}

/** The metric names of a Prometheus text exposition, with the series names of each histogram. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') {
      ['_bucket', '_sum', '_count'].forEach((suffix) => names.add(name + suffix));
    }
  }
  return names;
}

/** The value of one series of a Prometheus text exposition (labels in the order prom-client writes them). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the metrics operators alert on, and the shipped alert rules and dashboard', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  const registry = new Registry();

  beforeAll(async () => {
    db = await createTestDatabase();
    // A service with an outbox, so that its metrics are registered too (its relay sends nothing here).
    await db.query((await schemaSql()).find((migration) => migration.name.endsWith('create-outbox-messages-table'))!.sql);
    ({ app, baseUrl } = await startDemoApp('express', db.url, [FixtureModule], false, {
      purge: { interval: false },
      metrics: { registry, storeSampleInterval: '200ms' },
      outbox: { publishers: { rabbitmq: { publish: async () => undefined } } },
    }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('times claims and commits per consumer, counts 409s and in-flight deliveries, and samples the store', async () => {
    const credit = (key: string) => post(`${baseUrl}/credits`, { account: 'acc-alerts', cents: 100 }, { 'Idempotency-Key': key });
    for (const key of ['a-1', 'a-2', 'a-3', 'a-1', 'a-2']) {
      expect((await credit(key)).status).toBe(201);
    }
    // A twin that arrives while the first delivery is still in its transaction: 409.
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM accounts WHERE account = $1 FOR UPDATE', ['acc-alerts']);
    const first = credit('a-4');
    await until(
      async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length === 1,
      'the first delivery waits on the account lock',
    );
    const during = await registry.metrics();
    expect(sample(during, 'idempotency_in_flight_deliveries{consumer="POST /credits"}')).toBe(1);
    expect((await credit('a-4')).status).toBe(409);
    await holder.query('ROLLBACK');
    await holder.end();
    expect((await first).status).toBe(201);
    app.get(FixtureController).flakyAttempts = 0;
    expect((await post(`${baseUrl}/fixture/flaky`, { account: 'acc-alerts-flaky', cents: 5 }, { 'Idempotency-Key': 'af-1' })).status).toBe(500);

    const [{ rows }] = await db.query<{ rows: string }>('SELECT count(*) AS rows FROM processed_messages');
    expect(Number(rows)).toBe(4);
    await db.query('ANALYZE processed_messages');
    let text = '';
    await until(async () => {
      text = await registry.metrics();
      return sample(text, 'idempotency_store_estimated_rows') === 4;
    }, 'the store sampled after ANALYZE');

    // 4 claims won and 2 duplicates found on /credits; the 409 never got its claim.
    expect(sample(text, 'idempotency_claim_wait_seconds_count{consumer="POST /credits"}')).toBe(6);
    expect(sample(text, 'idempotency_claim_to_commit_seconds_count{consumer="POST /credits"}')).toBe(4);
    // The first a-4 held its claim while the account was locked.
    expect(sample(text, 'idempotency_claim_to_commit_seconds_sum{consumer="POST /credits"}')).toBeGreaterThan(0);
    expect(sample(text, 'idempotency_claim_wait_seconds_count{consumer="POST /fixture/flaky"}')).toBe(1);
    expect(sample(text, 'idempotency_claim_to_commit_seconds_count{consumer="POST /fixture/flaky"}')).toBeUndefined();
    expect(sample(text, 'idempotency_refused_total{consumer="POST /credits",status="409"}')).toBe(1);
    expect(sample(text, 'idempotency_in_flight_deliveries{consumer="POST /credits"}')).toBe(0);
    expect(sample(text, 'idempotency_in_flight_deliveries{consumer="POST /fixture/flaky"}')).toBe(0);
    // Replays against first deliveries: the delivery counter's outcomes, not a second counter.
    expect(sample(text, 'idempotency_deliveries_total{consumer="POST /credits",sender="default",outcome="processed"}')).toBe(4);
    expect(sample(text, 'idempotency_deliveries_total{consumer="POST /credits",sender="default",outcome="duplicate"}')).toBe(2);
    expect(sample(text, 'idempotency_store_size_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'idempotency_store_purge_lag_seconds')).toBe(0);
    expect(sample(text, 'idempotency_store_oldest_row_age_seconds')).toBeGreaterThan(0);
    expect(sample(text, 'idempotency_store_last_sample_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(sample(text, 'idempotency_outbox_lag_seconds')).toBe(0);
    expect(sample(text, 'idempotency_outbox_dead_letters')).toBe(0);
  });

  describe('every metric the shipped files read is one the module exposes', () => {
    let exposed: Set<string>;

    beforeAll(async () => {
      exposed = exposedNames(await registry.metrics());
    });

    it('the PromQL reader finds metric names and nothing else', () => {
      expect(
        metricNamesIn('histogram_quantile(0.99, sum by (consumer, le) (rate(x_seconds_bucket{a="b(c)"}[5m]))) > 1 and on(job) time() - y offset 5m'),
      ).toEqual(['x_seconds_bucket', 'y']);
    });

    it('the Prometheus rule file: each rule is complete and reads only exposed metrics', () => {
      const rules = (parse(readFileSync(`${DOCS}/alerts.rules.yml`, 'utf8')) as { groups: { rules: Record<string, unknown>[] }[] }).groups.flatMap(
        (group) => group.rules,
      );
      expect(rules.length).toBeGreaterThanOrEqual(10);
      for (const rule of rules) {
        expect(rule).toMatchObject({ alert: expect.any(String), expr: expect.any(String), labels: { severity: expect.any(String) } });
        expect((rule.annotations as { summary?: string }).summary).toEqual(expect.any(String));
        const names = metricNamesIn(rule.expr as string);
        expect(names.length).toBeGreaterThan(0);
        expect({ alert: rule.alert, missing: names.filter((name) => !exposed.has(name)) }).toEqual({ alert: rule.alert, missing: [] });
      }
    });

    it('the Grafana dashboard: each panel target reads only exposed metrics', () => {
      const dashboard = JSON.parse(readFileSync(`${DOCS}/grafana-dashboard.json`, 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
      expect(dashboard.panels.length).toBeGreaterThanOrEqual(8);
      const read = new Set<string>();
      for (const panel of dashboard.panels) {
        expect(panel.targets.length).toBeGreaterThan(0);
        for (const { expr } of panel.targets) {
          const names = metricNamesIn(expr);
          expect(names.length).toBeGreaterThan(0);
          names.forEach((name) => read.add(name));
          expect({ panel: panel.title, missing: names.filter((name) => !exposed.has(name)) }).toEqual({ panel: panel.title, missing: [] });
        }
      }
      // The dashboard shows every metric family the module registers.
      const families = [...exposed].filter((name) => !/_(bucket|sum|count)$/.test(name) || !exposed.has(name.replace(/_(bucket|sum|count)$/, '')));
      const shown = (family: string) => read.has(family) || ['_bucket', '_sum', '_count'].some((suffix) => read.has(family + suffix));
      expect(families.filter((family) => !shown(family))).toEqual(['idempotency_purge_last_duration_seconds', 'idempotency_purge_last_success_timestamp_seconds', 'idempotency_store_last_sample_timestamp_seconds']);
    });
  });
});
