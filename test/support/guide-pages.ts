import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The package's documentation folder, which ships in its tarball. */
export const DOCS = 'libs/idempotency/docs';

/** The guide's index: the page every other page of the guide is linked from. */
export const GUIDE_INDEX = `${DOCS}/guide.md`;

/** The guide's page of `name` (`'reference.md'`), by its path in the repository. */
export function guidePage(name: string): string {
  return `${DOCS}/${name}`;
}

/**
 * The guide's pages in the order its index lists them, the index first: each Markdown file of the
 * documentation folder the index links to. A link to a page that does not exist is not listed here;
 * test/docs-links.e2e-spec.ts fails on it.
 */
export function guidePages(): string[] {
  const index = readFileSync(GUIDE_INDEX, 'utf8');
  const linked = [...index.matchAll(/\]\(([\w-]+\.md)(?:#[^)]*)?\)/g)].map((match) => guidePage(match[1]));
  return [...new Set([GUIDE_INDEX, ...linked])].filter((page) => existsSync(page));
}

/** The guide's pages (above), read and joined in their order: for the checks that hold across pages. */
export function wholeGuide(): string {
  return guidePages()
    .map((page) => readFileSync(page, 'utf8'))
    .join('\n');
}

/** Every Markdown document the package ships: its README, its CHANGELOG and each file of its documentation folder. */
export function shippedDocuments(): string[] {
  const pages = readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(DOCS, name));
  return ['libs/idempotency/README.md', 'libs/idempotency/CHANGELOG.md', ...pages];
}
