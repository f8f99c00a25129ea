import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type DemoProcess, startAppProcess } from './demo-process.js';
import { installed, packLibrary, run, TSCONFIG } from './scratch-app.js';
import { createMariaDbDatabase } from './mariadb-database.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** The guide's page with a section per data layer. */
const GUIDE = 'libs/idempotency/docs/data-layers.md';

/** The services of other data layers the guide sets up, each built from its section alone. */
export type Layer = 'pg' | 'drizzle' | 'kysely' | 'prisma' | 'mikro-orm' | 'mysql2' | 'typeorm-mariadb' | 'prisma-mariadb' | 'mikro-orm-mariadb';
const SECTIONS: Record<Layer, string> = {
  pg: '### Plain pg',
  drizzle: '### Drizzle',
  kysely: '### Kysely',
  prisma: '### Prisma',
  'mikro-orm': '### MikroORM',
  mysql2: '### MariaDB: mysql2',
  'typeorm-mariadb': '### MariaDB: TypeORM',
  'prisma-mariadb': '### MariaDB: Prisma',
  'mikro-orm-mariadb': '### MariaDB: MikroORM',
};

/** The layers whose service is on MariaDB. */
const ON_MARIADB: ReadonlySet<Layer> = new Set(['mysql2', 'typeorm-mariadb', 'prisma-mariadb', 'mikro-orm-mariadb']);

/** A database of the service's own: PostgreSQL's (the shipped SQL printed by the package's command), or MariaDB's (its shipped file, or none where the service's TypeORM migration makes the store). */
interface ServiceDatabase {
  readonly url: string;
  query<Row>(sql: string): Promise<Row[]>;
  drop(): Promise<void>;
}

async function postgresDatabase(directory: string): Promise<ServiceDatabase> {
  const db: TestDatabase = await createTestDatabase();
  const { stdout: schema } = await run('npx', ['nestjs-idempotent-consumer-sql'], { cwd: directory });
  await db.query(schema);
  await db.query('CREATE TABLE credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)');
  return { url: db.url, query: (sql) => db.query(sql), drop: () => db.drop() };
}

async function mariaDbDatabase(directory: string, storeByMigration: boolean): Promise<ServiceDatabase> {
  const store = storeByMigration ? [] : [await readFile(join(directory, 'node_modules/nestjs-idempotent-consumer/sql/mariadb/1796601600000-create-processed-messages-table.sql'), 'utf8')];
  const db = await createMariaDbDatabase('idempotency_adopter', [
    ...store,
    'CREATE TABLE credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(64) NOT NULL, cents INT NOT NULL)',
  ]);
  return { url: db.url, query: async <Row>(sql: string) => (await db.pool.query(sql))[0] as Row[], drop: () => db.drop() };
}

/** What `nest new` gives every service besides its layer: the packages its main.ts needs, and skipLibCheck. */
const NEST_BASE = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', 'reflect-metadata', 'rxjs'];
const MAIN = `
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule);
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT), '127.0.0.1');
`;
/** The package's whole public API, both entry points, for a compile that checks their declarations. */
const API = `
import type * as idempotency from 'nestjs-idempotent-consumer';
import type * as testing from 'nestjs-idempotent-consumer/testing';

export type Api = [typeof idempotency, typeof testing];
`;

/** What the guide gives a new service on `layer`: the install commands of its section, and its files, by path, wherever the guide shows them (`run()` shows one per layer). */
function guideSection(layer: Layer): { commands: string[][]; files: Record<string, string> } {
  const markdown = readFileSync(GUIDE, 'utf8');
  const start = markdown.indexOf(`\n${SECTIONS[layer]}\n`);
  const end = markdown.indexOf('\n### ', start + 1);
  const section = markdown.slice(start, end);
  const commands = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].flatMap(([, block]) =>
    block
      .split('\n')
      .filter((line) => line.startsWith('npm ') || line.startsWith('npx '))
      .map((line) => line.split(/\s+/)),
  );
  const files = Object.fromEntries(
    [...markdown.matchAll(/<!-- layer example: (\S+) (\S+) -->\n```\w*\n([\s\S]*?)```/g)].filter(([, of]) => of === layer).map(([, , path, code]) => [path, code]),
  );
  return { commands, files };
}

/**
 * A new service on each data layer, made from the guide's section of that layer and nothing else:
 * its install lines (the packages pinned to the versions this repository tests, the library from
 * its packed tarball), its files, the shipped SQL printed by the package's command, and a main.ts
 * as `nest new` writes it; the package's declarations compile there with `skipLibCheck: false`
 * (a layer's own may not: Drizzle's do not). Then the effects are counted in its database (PostgreSQL, or MariaDB for the MariaDB sections).
 * One suite file per layer (test/adopter-layers.<layer>.e2e-spec.ts), so that jest's workers share
 * their installs.
 */
export function describeAdopterLayer(layer: Layer): void {
  describe(`a new service on ${layer}, set up from the guide's section alone`, () => {
    let folder: string;
    let db: ServiceDatabase;
    let app: DemoProcess | undefined;

    beforeAll(async () => {
      folder = await mkdtemp(join(tmpdir(), `idempotency-${layer}-`));
      const { tarball } = await packLibrary(folder);
      const { commands, files } = guideSection(layer);
      expect(files['src/app.module.ts']).toBeDefined();
      const directory = join(folder, 'service');
      const manifest: { name: string; private: boolean; type: string; dependencies: Record<string, string>; devDependencies: Record<string, string> } = {
        name: `${layer}-service`,
        private: true,
        type: 'module',
        dependencies: Object.fromEntries(NEST_BASE.map((name) => [name, installed(name)])),
        devDependencies: { '@types/node': installed('@types/node') },
      };
      const installs = commands.filter(([npm, verb]) => npm === 'npm' && verb === 'install');
      expect(installs).not.toHaveLength(0);
      for (const [, , ...packages] of installs) {
        const dev = packages.includes('--save-dev');
        for (const spec of packages.filter((word) => !word.startsWith('--'))) {
          const name = spec.replace(/(?<=.)@[^@/]*$/, '');
          // The version this repository tests; a tool it does not install (drizzle-kit), at the version the guide names.
          const version = name === 'nestjs-idempotent-consumer' ? `file:${tarball}` : existsSync(resolve('node_modules', name)) ? installed(name) : spec.slice(name.length + 1);
          (dev ? manifest.devDependencies : manifest.dependencies)[name] = version;
        }
      }
      await mkdir(directory, { recursive: true });
      await writeFile(join(directory, 'package.json'), JSON.stringify(manifest, null, 2));
      await writeFile(join(directory, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, compilerOptions: { ...TSCONFIG.compilerOptions, skipLibCheck: true } }, null, 2));
      for (const [path, code] of Object.entries({ ...files, 'src/main.ts': MAIN })) {
        await mkdir(dirname(join(directory, path)), { recursive: true });
        await writeFile(join(directory, path), code);
      }
      await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: directory, timeout: 300_000 });
      // The guide's other commands (prisma generate); prisma's engines cannot be downloaded here, and generate uses none.
      for (const [npx, ...rest] of commands.filter(([command]) => command === 'npx')) {
        await run(npx, rest, { cwd: directory, timeout: 120_000, env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true' } });
      }
      await run(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: directory, timeout: 120_000 });
      // The package's declarations, checked (skipLibCheck: false) with only this layer installed: no TypeORM.
      await mkdir(join(directory, 'api-check'));
      await writeFile(join(directory, 'api-check', 'api.ts'), API);
      const apiCheck = { compilerOptions: { ...TSCONFIG.compilerOptions, skipLibCheck: false, noEmit: true, rootDir: 'api-check' }, include: ['api-check'] };
      await writeFile(join(directory, 'tsconfig.api-check.json'), JSON.stringify(apiCheck, null, 2));
      await run(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.api-check.json'], { cwd: directory, timeout: 120_000 });

      db = await (ON_MARIADB.has(layer) ? mariaDbDatabase(directory, layer === 'typeorm-mariadb') : postgresDatabase(directory));
      app = await startAppProcess(join(directory, 'dist', 'main.js'), { DATABASE_URL: db.url }, '/');
    }, 600_000);

    afterAll(async () => {
      await app?.kill('SIGKILL');
      await db?.drop();
      await rm(folder, { recursive: true, force: true });
    });

    it('20 concurrent duplicates make one credit; a new key makes another', async () => {
      const grant = (key: string) =>
        fetch(`${app!.baseUrl}/credits`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: '{"account":"a-1","cents":5}' });
      const answers = await Promise.all(Array.from({ length: 20 }, () => grant('first')));
      expect(answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
      expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
      expect((await grant('first')).headers.get('idempotent-replayed')).toBe('true');
      expect((await grant('second')).status).toBe(201);
      expect((await db.query<{ account: string; cents: number }>('SELECT account, cents FROM credits ORDER BY id')).map(({ account, cents }) => ({ account, cents: Number(cents) }))).toEqual([
        { account: 'a-1', cents: 5 },
        { account: 'a-1', cents: 5 },
      ]);
      expect(Number((await db.query<{ n: string | number }>('SELECT count(*) AS n FROM processed_messages'))[0].n)).toBe(2);
    });
  });
}
