import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The packages the bench installs for itself, each in a folder of `bench/` with its own
 * package.json and lock file, so that none of them is a dependency of the project: `runtime`
 * (the Node.js the app processes run on) and `peer` (the library the bench compares with).
 */
export type BenchPackage = 'runtime' | 'peer';

/** `bench/` of the repository, from the compiled file's place in `dist/bench/support/`. */
const BENCH_SOURCE_DIR = fileURLToPath(new URL('../../../bench/', import.meta.url));

/** Where the bench package `name` lives in the repository. */
export function benchPackageDir(name: BenchPackage): string {
  return join(BENCH_SOURCE_DIR, name);
}

/**
 * Runs `npm ci` in the bench package `name` unless every package its lock file lists is installed
 * at the locked version and each of `products` (files an install script makes, relative to the
 * package's folder) exists. npm reads the package's own `.npmrc` and `allowScripts`.
 */
export async function ensureBenchPackage(name: BenchPackage, products: readonly string[], log: (line: string) => void): Promise<void> {
  const dir = benchPackageDir(name);
  if (isInstalled(dir, products)) {
    return;
  }
  log(`installing bench/${name} (npm ci --prefix bench/${name}) ...`);
  await promisify(execFile)('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund'], { maxBuffer: 16 * 2 ** 20 });
  if (!isInstalled(dir, products)) {
    throw new Error(`npm ci --prefix bench/${name} left it incomplete: expected ${products.join(', ')} and the locked versions`);
  }
}

function isInstalled(dir: string, products: readonly string[]): boolean {
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const locked = Object.entries(lock.packages).filter(([path]) => path.startsWith('node_modules/'));
  const atLockedVersion = ([path, { version }]: [string, { version?: string }]) => {
    const manifest = join(dir, path, 'package.json');
    return existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version === version;
  };
  return locked.every(atLockedVersion) && products.every((product) => existsSync(join(dir, product)));
}

/** The version of `dependency` installed in the bench package `name`. */
export function installedVersion(name: BenchPackage, dependency: string): string {
  const manifest = join(benchPackageDir(name), 'node_modules', dependency, 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}
