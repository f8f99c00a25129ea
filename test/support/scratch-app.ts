import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const execute = promisify(execFile);

/** Runs a command; a failure says what it printed. */
export async function run(command: string, args: string[], options: { cwd: string; timeout?: number; env?: NodeJS.ProcessEnv }): Promise<{ stdout: string }> {
  try {
    return await execute(command, args, options);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${options.cwd}:\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
  }
}

/** The version of a package installed in this repository, so the scratch apps install the same from the npm cache. */
export const installed = (name: string) =>
  (JSON.parse(readFileSync(resolve('node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

/** The packed library: its tarball and the files in it. */
export interface PackedLibrary {
  readonly tarball: string;
  readonly size: number;
  readonly files: readonly string[];
}

/** `npm pack`s the library into `folder`, as a user gets it. */
export async function packLibrary(folder: string): Promise<PackedLibrary> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', folder], { cwd: resolve('libs/idempotency') });
  const [packed] = JSON.parse(stdout) as { filename: string; size: number; files: { path: string }[] }[];
  return { tarball: join(folder, packed.filename), size: packed.size, files: packed.files.map((file) => file.path) };
}

/** The scratch services' tsconfig.json: a Nest 12 service as `nest new` makes it, strict. */
export const TSCONFIG = {
  compilerOptions: {
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    target: 'ES2023',
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    strict: true,
    outDir: 'dist',
    rootDir: 'src',
    types: ['node'],
  },
  include: ['src'],
};

/**
 * A new ESM Nest service in `folder/name`, outside the repository: `sources` (paths under `src/`)
 * with the packed library and `dependencies`, installed from the npm registry (or its cache) and
 * compiled with tsc. Answers its directory; the compiled files are in its `dist/`.
 */
export async function scratchApp(
  folder: string,
  name: string,
  tarball: string,
  dependencies: Record<string, string>,
  sources: Record<string, string>,
  installFlags: string[] = [],
): Promise<string> {
  const directory = join(folder, name);
  const manifest = { name, private: true, type: 'module', dependencies: { 'nestjs-idempotent-consumer': `file:${tarball}`, ...dependencies } };
  await mkdir(join(directory, 'src'), { recursive: true });
  await writeFile(join(directory, 'package.json'), JSON.stringify(manifest, null, 2));
  await writeFile(join(directory, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  for (const [path, source] of Object.entries(sources)) {
    await mkdir(dirname(join(directory, 'src', path)), { recursive: true });
    await writeFile(join(directory, 'src', path), source);
  }
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...installFlags], { cwd: directory, timeout: 300_000 });
  await run(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: directory, timeout: 120_000 });
  return directory;
}
