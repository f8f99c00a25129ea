import { readFile } from 'node:fs/promises';
import { shippedDocuments } from './support/guide-pages.js';

/**
 * The package says what it is: its version is the CHANGELOG's newest section, every change is
 * written under the version that ships it (no section without a version), and the repository's
 * own apps depend on that version.
 */
describe('the package version and its CHANGELOG', () => {
  const read = async (path: string) => readFile(path, 'utf8');
  const packageVersion = async () => (JSON.parse(await read('libs/idempotency/package.json')) as { version: string }).version;
  const sections = async () => [...(await read('libs/idempotency/CHANGELOG.md')).matchAll(/^## (.*)$/gm)].map((match) => match[1]);
  const parts = (version: string) => version.split('.').map(Number);
  const newer = (a: string, b: string) => {
    const [x, y] = [parts(a), parts(b)];
    const index = x.findIndex((part, position) => part !== y[position]);
    return index >= 0 && x[index] > y[index];
  };

  it('names every section by a version and its date, newest first, the newest being the package version', async () => {
    const headings = await sections();
    expect(headings.length).toBeGreaterThan(0);
    const parsed = headings.map((heading) => {
      const match = /^\[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$/.exec(heading);
      expect(match).not.toBeNull();
      return { version: match![1], date: match![2] };
    });
    expect(parsed[0].version).toBe(await packageVersion());
    for (let index = 1; index < parsed.length; index++) {
      expect(newer(parsed[index - 1].version, parsed[index].version)).toBe(true);
      expect(parsed[index - 1].date >= parsed[index].date).toBe(true);
    }
  });

  it("is the version the repository's own apps install", async () => {
    const root = JSON.parse(await read('package.json')) as { dependencies: Record<string, string> };
    expect(root.dependencies['nestjs-idempotent-consumer']).toBe(await packageVersion());
  });

  it('names the tarball of this version wherever the documents the package ships name one', async () => {
    const version = await packageVersion();
    for (const path of shippedDocuments().filter((document) => !document.endsWith('CHANGELOG.md'))) {
      const named = [...(await read(path)).matchAll(/nestjs-idempotent-consumer-(\d+\.\d+\.\d+)\.tgz/g)].map((match) => match[1]);
      expect({ path, named }).toEqual({ path, named: named.map(() => version) });
    }
  });

  it('claims no publication to a registry in the documents the package ships', async () => {
    for (const path of shippedDocuments()) {
      expect({ path, claims: (await read(path)).match(/published (?:to|on|as) (?:the )?npm/gi) }).toEqual({ path, claims: null });
    }
  });
});
