import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * CI runs every end-to-end suite on the default pair (the embedded PostgreSQL 18, TypeORM 1.1) and
 * again, on each other variable, only the suites listed for it in test/variables.json (.ci/run reads
 * the lists). This check keeps the lists honest: a suite whose code shows that it can observe a
 * variable must be on that variable's list, or be represented there (`represented`: the listed
 * suite that drives the same path of the library and shows every sign it shows, and why), and
 * every listed or represented suite must exist.
 *
 * A suite's code is its file, the files under test/ it imports (support, fixtures, test apps, each
 * transitively) and the test apps it starts (dist/test-apps/test/apps/<app>: all of test/apps/<app>).
 * The demo app (apps/demo-api) is not followed: every suite boots it, wired the same way.
 */

interface Variable {
  readonly description: string;
  readonly suites: Record<string, string>;
  /** Suites that show signs of the variable but do not run for it: the listed suite that stands for each, and why. */
  readonly represented?: Record<string, { readonly by: string; readonly why: string }>;
  /** Suites that show signs of the variable but cannot meet it (their store is on another database), and why. */
  readonly apart?: Record<string, string>;
}

/** What in a suite's code shows that it observes a variable, and what the text of that code shows it by. */
interface Signal {
  readonly shows: string;
  readonly pattern: RegExp;
}

/**
 * Migrations run by hand: a data source's runMigrations or a migration's up()/down() called, the
 * store's migrations extended, a released schema created. An app that only lists the store's
 * migrations in its data source runs them as the demo app does, at boot.
 */
const STORE_MIGRATED_BY_HAND = /runMigrations|undoLastMigration|\.up\(|\.down\(|extends (Create|Upgrade)ProcessedMessages\w*|CREATE TABLE "processed_messages"/;

const SIGNALS: Record<string, readonly Signal[]> = {
  'postgres-15': [
    {
      shows: "runs the store's SQL beyond the claim (admin, purge, health, the lease store on PostgreSQL)",
      pattern: /\b(IdempotencyAdmin|IdempotencyAdminModule|IdempotencyPurgeService|IdempotencyHealthIndicator|PostgresLeaseStore)\b|store: 'postgres'/,
    },
    { shows: 'creates or upgrades the store itself (its migrations run by hand, released schemas)', pattern: STORE_MIGRATED_BY_HAND },
    { shows: "samples the store's statistics (the store's gauges)", pattern: /idempotency_store_|estimatedRows|storeSampleInterval|metrics\.store\(\)/ },
    {
      shows: 'reads the catalogues',
      pattern: /\b(pg_catalog|pg_class|pg_proc|pg_index|pg_indexes|pg_attribute|pg_constraint|pg_namespace|pg_depend|pg_trigger|pg_stat_user_tables|pg_stats|information_schema)\b/,
    },
  ],
  'typeorm-0.3': [
    { shows: "uses TypeORM's API (data sources, entity managers, repositories, migrations, entities)", pattern: /from ['"]typeorm['"]/ },
    { shows: "injects TypeORM's data source or repositories", pattern: /\b(InjectDataSource|InjectRepository|InjectEntityManager|getDataSourceToken|forFeature)\b/ },
    { shows: "uses the store's TypeORM entity", pattern: /\bProcessedMessage\b/ },
    { shows: "runs TypeORM migrations itself (the store's, released schemas)", pattern: STORE_MIGRATED_BY_HAND },
    { shows: 'joins the transaction of a TypeORM transactions library', pattern: /typeorm-transactional|transactional-adapter-typeorm/ },
    { shows: "cuts the database's connection under a claim (the loss surfaces through TypeORM's query runner)", pattern: /\bTcpProxy\.toDatabase\b|pg_terminate_backend/ },
    { shows: "runs the transport contract, whose database outage fails claims (the loss surfaces through TypeORM's query runner)", pattern: /\btransportContract\b/ },
  ],
};

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const TEST = join(ROOT, 'test');
const variables = JSON.parse(readFileSync(join(TEST, 'variables.json'), 'utf8')) as Record<string, Variable>;

function filesUnder(folder: string, suffix: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith(suffix) && !path.split('/').includes('node_modules') && !path.split('/').includes('dist'))
    .map((path) => join(folder, path));
}

const suites = [...filesUnder(TEST, '.e2e-spec.ts'), ...filesUnder(join(ROOT, 'libs'), '.e2e-spec.ts')].map((path) => relative(ROOT, path)).sort();

/** The files of a suite's code (see above), each read once. */
function suiteCode(suite: string): Map<string, string> {
  const code = new Map<string, string>();
  const visit = (file: string) => {
    if (code.has(file) || !existsSync(file)) {
      return;
    }
    const text = readFileSync(file, 'utf8');
    code.set(file, text);
    for (const [, specifier] of text.matchAll(/(?:from|import)\s+['"](\.{1,2}\/[^'"]+)\.js['"]/g)) {
      const target = resolve(dirname(file), `${specifier}.ts`);
      if (target.startsWith(`${TEST}/`)) {
        visit(target);
      }
    }
    for (const [, app] of text.matchAll(/dist\/test-apps\/test\/apps\/([\w-]+)/g)) {
      filesUnder(join(TEST, 'apps', app), '.ts').forEach(visit);
    }
  };
  visit(join(ROOT, suite));
  return code;
}

/** The signals of `variable` that a suite's code shows: what each shows, and the file that shows it. */
function shown(suite: string, variable: string): Map<string, string> {
  const code = [...suiteCode(suite)];
  return new Map(
    SIGNALS[variable].flatMap(({ shows, pattern }) => {
      const file = code.find(([, text]) => pattern.test(text))?.[0];
      return file ? [[shows, relative(ROOT, file)] as const] : [];
    }),
  );
}

/** The signals of `variable` that a suite's code shows, each with the file that shows it. */
const observed = (suite: string, variable: string) => [...shown(suite, variable)].map(([shows, file]) => `${shows} (${file})`);

describe('the suites each CI variable runs (test/variables.json)', () => {
  it('has a list for every variable the check knows, and knows every list', () => {
    expect(Object.keys(variables).sort()).toEqual(Object.keys(SIGNALS).sort());
  });

  it.each(Object.keys(SIGNALS))('%s lists every suite whose code shows it can observe it', (variable) => {
    const missing = suites
      .map((suite) => ({ suite, shows: observed(suite, variable) }))
      .filter(({ suite, shows }) => shows.length > 0 && !(suite in variables[variable].suites) && !(suite in (variables[variable].represented ?? {})) && !(suite in (variables[variable].apart ?? {})))
      .map(({ suite, shows }) => `${suite} must join the ${variable} list in test/variables.json: it ${shows.join('; it ')}`);
    expect(missing).toEqual([]);
  });

  it.each(Object.keys(SIGNALS))('%s represents a suite only by a listed suite that shows every sign it shows, and says why', (variable) => {
    const { suites: listed, represented = {} } = variables[variable];
    const wrong = Object.entries(represented).flatMap(([suite, { by, why }]) => [
      ...(suites.includes(suite) ? [] : [`${suite} is represented for ${variable} but is not an end-to-end suite`]),
      ...(by in listed ? [] : [`${suite} is represented for ${variable} by ${by}, which is not on the list`]),
      ...(why.trim() ? [] : [`${suite} is represented for ${variable} without why`]),
      ...[...shown(suite, variable).keys()].filter((shows) => !shown(by, variable).has(shows)).map((shows) => `${suite} is represented for ${variable} by ${by}, which does not show that it ${shows}`),
    ]);
    expect(wrong).toEqual([]);
  });

  it.each(Object.keys(SIGNALS))('%s lists only suites that exist, each with why it is there (or apart)', (variable) => {
    const listed = [...Object.entries(variables[variable].suites), ...Object.entries(variables[variable].apart ?? {})];
    expect(listed.filter(([suite]) => !suites.includes(suite)).map(([suite]) => `${suite} is listed for ${variable} but is not an end-to-end suite`)).toEqual([]);
    expect(listed.filter(([, why]) => !why.trim()).map(([suite]) => `${suite} on the ${variable} list says nothing of why`)).toEqual([]);
  });
});
