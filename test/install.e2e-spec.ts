import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { installed, packLibrary, run } from './support/scratch-app.js';

/** The TypeORM release the guide's `npm install ... typeorm` installed when this was written: the 1.1 line. */
const TYPEORM_1_1 = '1.1.3';

/** The `"overrides"` the guide's section under `heading` tells a service to add, as JSON. */
function documentedOverrides(guide: string, heading: string): Record<string, unknown> {
  const section = guide.slice(guide.indexOf(`\n${heading}\n`));
  const block = /```json\n(\s*"overrides": \{[\s\S]*?\n\s*\})\n\s*```/.exec(section.slice(0, section.indexOf('\n## ', 1)));
  if (!block) {
    throw new Error(`no "overrides" JSON block in the guide's section ${heading}`);
  }
  return (JSON.parse(`{${block[1]}}`) as { overrides: Record<string, unknown> }).overrides;
}

/**
 * The guide's install line, `npm install nestjs-idempotent-consumer @nestjs/typeorm typeorm pg`,
 * from the packed tarball on TypeORM 1.1, in a new Nest 12 service whose package.json carries the
 * `overrides` a transport's section documents, with that transport's packages: npm resolves it
 * from the registry (or its cache), and the library loads.
 */
describe('the documented install, next to the transports that need npm overrides', () => {
  let folder: string;
  let tarball: string;
  let guide: string;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'idempotency-install-'));
    ({ tarball } = await packLibrary(folder));
    guide = await readFile(resolve('libs/idempotency/docs/transports.md'), 'utf8');
  });

  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  async function installBeside(name: string, heading: string, transport: string[]): Promise<string> {
    const directory = join(folder, name);
    await mkdir(directory);
    const manifest = {
      name,
      private: true,
      type: 'module',
      // What `nest new` leaves for Nest 12, before the guide's install line.
      dependencies: {
        '@nestjs/common': `^${installed('@nestjs/common')}`,
        '@nestjs/core': `^${installed('@nestjs/core')}`,
        '@nestjs/platform-express': `^${installed('@nestjs/platform-express')}`,
        'reflect-metadata': `^${installed('reflect-metadata')}`,
        rxjs: `^${installed('rxjs')}`,
      },
      overrides: documentedOverrides(guide, heading),
    };
    await writeFile(join(directory, 'package.json'), JSON.stringify(manifest, null, 2));
    const packages = [tarball, '@nestjs/typeorm', `typeorm@${TYPEORM_1_1}`, 'pg', ...transport];
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...packages], { cwd: directory, timeout: 300_000 });
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('nestjs-idempotent-consumer'); console.log(typeof m.IdempotencyModule.forRoot)"],
      { cwd: directory },
    );
    expect(stdout.trim()).toBe('function');
    expect(JSON.parse(await readFile(join(directory, 'node_modules', 'typeorm', 'package.json'), 'utf8'))).toMatchObject({ version: TYPEORM_1_1 });
    // The ioredis entry settles a version npm checks; it installs nothing.
    expect(existsSync(join(directory, 'node_modules', 'ioredis'))).toBe(false);
    return directory;
  }

  it('beside @golevelup/nestjs-rabbitmq with the overrides of its section, npm install succeeds on TypeORM 1.1', async () => {
    const directory = await installBeside('golevelup-worker', '## RabbitMQ through @golevelup/nestjs-rabbitmq', [
      `@golevelup/nestjs-rabbitmq@${installed('@golevelup/nestjs-rabbitmq')}`,
    ]);
    expect(existsSync(join(directory, 'node_modules', '@golevelup', 'nestjs-rabbitmq'))).toBe(true);
  });

  it('beside @ssut/nestjs-sqs with the overrides of its section, npm install succeeds on TypeORM 1.1', async () => {
    const directory = await installBeside('sqs-worker', '## Amazon SQS (@ssut/nestjs-sqs)', [
      `@ssut/nestjs-sqs@${installed('@ssut/nestjs-sqs')}`,
      `@aws-sdk/client-sqs@${installed('@aws-sdk/client-sqs')}`,
    ]);
    expect(existsSync(join(directory, 'node_modules', '@ssut', 'nestjs-sqs'))).toBe(true);
  });
});
