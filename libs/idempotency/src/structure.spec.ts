import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The library's imports flow one way: errors at the bottom, features above them, the module and
 * the entries on top. Read from the source itself (every relative `from '...'`, `import '...'` and
 * `import('...')` of a file that is not a spec), so a new file is checked the day it is written.
 */
const SOURCE = dirname(fileURLToPath(import.meta.url));

/** What errors/ may import besides itself: the public constants, which import nothing. */
const BELOW_ERRORS = ['idempotency.constants.ts'];

describe('the structure of the imports', () => {
  const imports = readImports();

  it('has no import cycle', () => {
    expect(findCycles(imports).map((files) => files.join(', '))).toEqual([]);
  });

  it('keeps errors/ at the bottom: it imports nothing of the library outside errors/ but the constants', () => {
    const outside = [...imports]
      .filter(([file]) => file.startsWith('errors/'))
      .flatMap(([file, targets]) => targets.filter((target) => !target.startsWith('errors/') && !BELOW_ERRORS.includes(target)).map((target) => `${file} -> ${target}`));
    expect(outside).toEqual([]);
    expect(BELOW_ERRORS.flatMap((file) => imports.get(file) ?? [])).toEqual([]);
  });
});

/** Each source file (relative to src/) with the library's files it imports. */
function readImports(): Map<string, string[]> {
  const files = (readdirSync(SOURCE, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.ts') && !/\.(e2e-)?spec\.ts$/.test(file))
    .map((file) => file.split('\\').join('/'))
    .sort();
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const text = readFileSync(join(SOURCE, file), 'utf8');
      const specifiers = [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((match) => match[1]);
      // A specifier names the emitted .js: its source is a .ts, or a declaration file shipped as written (a .d.ts).
      const targets = specifiers
        .map((specifier) => relative(SOURCE, join(SOURCE, dirname(file), specifier)).split('\\').join('/').replace(/\.js$/, '.ts'))
        .map((target) => (known.has(target) ? target : target.replace(/\.ts$/, '.d.ts')));
      for (const target of targets) {
        if (!known.has(target)) {
          throw new Error(`${file} imports ${target}, which is not a source file`);
        }
      }
      return [file, [...new Set(targets)]];
    }),
  );
}

/** The strongly connected components of more than one file (or a file importing itself), each sorted, in order. */
function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    lowest.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(target)!));
      } else if (onStack.has(target)) {
        lowest.set(file, Math.min(lowest.get(file)!, index.get(target)!));
      }
    }
    if (lowest.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || graph.get(file)?.includes(file)) {
        cycles.push(component.sort());
      }
    }
  };
  for (const file of graph.keys()) {
    if (!index.has(file)) {
      visit(file);
    }
  }
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}
