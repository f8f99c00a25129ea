import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { GUIDE_INDEX, guidePage, guidePages, wholeGuide } from './support/guide-pages.js';

/**
 * The documentation's relative links lead somewhere: every link of the Markdown a user or a
 * contributor reads resolves to a file of the repository, and its `#anchor` to a heading of that
 * file. The package's own documents ship in its tarball and are read from `node_modules`, so their
 * links must stay inside the package, on files its `files` list ships.
 */

const PACKAGE_DIR = 'libs/idempotency';

/** The documents checked, relative to the repository's root. */
function documents(): string[] {
  const inFolder = (folder: string) =>
    existsSync(folder) ? readdirSync(folder).filter((name) => name.endsWith('.md')).map((name) => join(folder, name)) : [];
  return ['README.md', ...inFolder('docs'), `${PACKAGE_DIR}/README.md`, `${PACKAGE_DIR}/CHANGELOG.md`, ...inFolder(`${PACKAGE_DIR}/docs`)].filter(
    (file) => existsSync(file),
  );
}

/** The Markdown outside fenced code blocks and inline code, where links and headings are. */
function prose(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) {
      lines.push(line.replace(/`[^`]*`/g, (code) => (code.includes('](') ? '``' : code)));
    }
  }
  return lines;
}

/** The anchors GitHub (and npm) give the headings of a document. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) {
      continue;
    }
    const slug = heading[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    found.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return found;
}

/** The relative link targets of a document: inline links and images, and link definitions. */
function links(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of prose(markdown)) {
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      targets.push(match[1]);
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+".*")?\s*$/.exec(line);
    if (definition) {
      targets.push(definition[1]);
    }
  }
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** Whether the package's `files` list ships a path of the package. */
function shipped(pathInPackage: string): boolean {
  const { files } = JSON.parse(readFileSync(`${PACKAGE_DIR}/package.json`, 'utf8')) as { files: string[] };
  const [first] = pathInPackage.split('/');
  return pathInPackage === 'package.json' || files.some((entry) => !entry.startsWith('!') && (entry === pathInPackage || entry === first));
}

/** What is wrong with the links of one document, one sentence each. */
function brokenLinks(file: string, markdown: string): string[] {
  const problems: string[] = [];
  const packageRoot = resolve(PACKAGE_DIR);
  const inPackage = resolve(file).startsWith(packageRoot + sep);
  for (const target of links(markdown)) {
    const [path, anchor] = target.split('#', 2);
    if (path === '') {
      if (!anchors(markdown).has(anchor)) {
        problems.push(`${file}: ${target} names no heading of ${file}`);
      }
      continue;
    }
    const resolved = resolve(dirname(file), decodeURIComponent(path));
    if (!existsSync(resolved)) {
      problems.push(`${file}: ${target} leads to no file`);
      continue;
    }
    if (inPackage) {
      const pathInPackage = relative(packageRoot, resolved).split(sep).join('/');
      if (pathInPackage.startsWith('..') || !shipped(pathInPackage)) {
        problems.push(`${file}: ${target} leads to a file the package does not ship, so the link breaks in node_modules`);
        continue;
      }
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor)) {
      problems.push(`${file}: ${target} names no heading of ${relative('.', resolved)}`);
    }
  }
  return problems;
}

describe('the documentation links', () => {
  it('finds a link to a missing file, a missing heading and a file outside the package', () => {
    const markdown = [
      '# Title',
      '## A heading: with `code`, and punctuation',
      '[fine](#a-heading-with-code-and-punctuation) [gone](nowhere.md) [no heading](#nowhere)',
      '[outside](../../../README.md) [web](https://example.com) `[in code](nowhere.md)`',
      '```',
      '[in a block](nowhere.md)',
      '```',
    ].join('\n');
    expect(brokenLinks(`${PACKAGE_DIR}/docs/example.md`, markdown)).toEqual([
      `${PACKAGE_DIR}/docs/example.md: nowhere.md leads to no file`,
      `${PACKAGE_DIR}/docs/example.md: #nowhere names no heading of ${PACKAGE_DIR}/docs/example.md`,
      `${PACKAGE_DIR}/docs/example.md: ../../../README.md leads to a file the package does not ship, so the link breaks in node_modules`,
    ]);
  });

  it('checks the README, docs/, and the package README, CHANGELOG and guide', () => {
    expect(documents()).toEqual(
      expect.arrayContaining(['README.md', `${PACKAGE_DIR}/README.md`, `${PACKAGE_DIR}/CHANGELOG.md`, `${PACKAGE_DIR}/docs/guide.md`]),
    );
  });

  it.each(documents())('every relative link of %s resolves', (file) => {
    const markdown = readFileSync(file, 'utf8');
    expect(links(markdown).length).toBeGreaterThan(0);
    expect(brokenLinks(file, markdown)).toEqual([]);
  });
});

/** The anchors of a document's `##` and `###` headings, in order, as GitHub makes them. */
function sectionAnchors(markdown: string): string[] {
  const sections = prose(markdown).filter((line) => /^#{2,3}\s/.test(line));
  return [...anchors(sections.join('\n'))];
}

/** The anchors the contents list (the text before the first `##` heading) links to. */
function contents(markdown: string): Set<string> {
  const lines = prose(markdown);
  const before = lines.slice(0, lines.findIndex((line) => /^##\s/.test(line)));
  return new Set(before.flatMap((line) => [...line.matchAll(/\]\(#([^)]+)\)/g)].map((match) => match[1])));
}

/** The first cell of each row of the table that follows `heading`. */
function optionRows(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  const rows: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('#')) {
      break;
    }
    const cell = /^\|\s*(`[^`]+`)\s*\|/.exec(line);
    if (cell) {
      rows.push(cell[1]);
    }
  }
  return rows;
}

/** The anchor GitHub gives a heading's text. */
function anchorOf(heading: string): string {
  return [...anchors(`# ${heading}`)][0];
}

describe('the guide in pages', () => {
  it.each(guidePages())('links every ## and ### heading of %s from its contents list', (page) => {
    expect(sectionAnchors('## Kept\n### Kept too\n## Left out').filter((anchor) => !contents('- [k](#kept)\n- [t](#kept-too)\n## Kept').has(anchor))).toEqual([
      'left-out',
    ]);
    const markdown = readFileSync(page, 'utf8');
    const listed = contents(markdown);
    expect(sectionAnchors(markdown).filter((anchor) => !listed.has(anchor))).toEqual([]);
  });

  it('links, from its index, every page of the documentation folder', () => {
    const pages = readdirSync(dirname(GUIDE_INDEX))
      .filter((name) => name.endsWith('.md'))
      .map((name) => guidePage(name));
    expect(pages.filter((page) => !guidePages().includes(page))).toEqual([]);
  });

  it('keeps each section the index once held at its old address, with a link to the same section on its page', () => {
    const index = readFileSync(GUIDE_INDEX, 'utf8');
    const moved = index.slice(index.indexOf('\n## Sections moved from this page\n'));
    const sections = [...moved.matchAll(/^#### (.+)\n\n\[[^\]]*\]\(([\w-]+\.md)(?:#([^)]+))?\)$/gm)];
    expect(sections.length).toBe(moved.split('\n').filter((line) => line.startsWith('#')).length - 1);
    for (const [, heading, , anchor] of sections.filter(([, , , anchor]) => anchor !== undefined)) {
      expect({ heading, anchor }).toEqual({ heading, anchor: anchorOf(heading) });
    }
    // Two sections only introduced what is now a page of its own, and lead to that page.
    expect(sections.filter(([, , , anchor]) => anchor === undefined).map(([, heading, page]) => `${heading}: ${page}`)).toEqual([
      'Handlers: transports.md',
      'Operations: retention, purge, health, metrics: operations.md',
    ]);
  });

  it.each(['### Module options (`IdempotencyModule.forRoot`)', '### Handler options (`@IdempotentHandler({ ... })`)'])(
    'lists each option of "%s" once',
    (heading) => {
      const rows = optionRows(readFileSync(guidePage('reference.md'), 'utf8'), heading);
      expect(rows.length).toBeGreaterThan(5);
      expect(rows.filter((row, index) => rows.indexOf(row) !== index)).toEqual([]);
    },
  );
});

describe('the guide\'s supported versions', () => {
  const guide = readFileSync(guidePage('reference.md'), 'utf8');
  const { peerDependencies, peerDependenciesMeta } = JSON.parse(readFileSync(`${PACKAGE_DIR}/package.json`, 'utf8')) as {
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional?: boolean }>;
  };
  const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { version: string }> };
  /** The table's rows by peer: range (unescaped), optional, tested. */
  const table = new Map(
    guide
      .split('\n')
      .slice(guide.split('\n').indexOf('## Supported versions'))
      .map((line) => /^\| `([^`]+)` \| `(.+?)` \| (no|yes[^|]*) \| (.+) \|$/.exec(line))
      .filter((row) => row !== null)
      .map(([, peer, range, optional, tested]) => [peer, { range: range.replace(/\\\|/g, '|'), optional: optional !== 'no', tested }]),
  );

  it('lists every peer dependency of the package, with its range and whether it is optional, and nothing else', () => {
    expect([...table.keys()].sort()).toEqual(Object.keys(peerDependencies).sort());
    for (const [peer, range] of Object.entries(peerDependencies)) {
      expect({ peer, range: table.get(peer)?.range, optional: table.get(peer)?.optional }).toEqual({
        peer,
        range,
        optional: peerDependenciesMeta[peer]?.optional === true,
      });
    }
  });

  it('names, for each peer, the version the lock file installs for CI', () => {
    for (const peer of Object.keys(peerDependencies)) {
      const locked = lock.packages[`node_modules/${peer}`]?.version;
      expect({ peer, tested: table.get(peer)?.tested.split(/[ ,(]/)[0] }).toEqual({ peer, tested: locked });
    }
  });

  it('names every optional peer in an install line', () => {
    const installLines = wholeGuide()
      .split('\n')
      .filter((line) => line.startsWith('npm install '));
    const notInstalled = Object.keys(peerDependencies).filter(
      (peer) => peerDependenciesMeta[peer]?.optional === true && !installLines.some((line) => line.split(/\s+/).includes(peer)),
    );
    expect(notInstalled).toEqual([]);
  });
});

describe('the shipped documents', () => {
  /** Paths of the repository outside the package, which a reader of the tarball cannot open. */
  const REPOSITORY_PATH = /(?:^|[\s`(])((?:test|bench|apps|\.ci|docs)\/[\w./-]*\w|[\w./-]+\.(?:e2e-)?spec\.ts)/g;
  const repositoryPaths = (markdown: string) =>
    [...markdown.replace(/<!--.*?-->/g, '').matchAll(REPOSITORY_PATH)]
      .map((match) => match[1])
      .filter((path) => !(path.startsWith('docs/') && existsSync(join(PACKAGE_DIR, path))));

  it('finds a path of the repository', () => {
    expect(repositoryPaths('the `test/purge.e2e-spec.ts` and bench/sizing.main.ts, docs/benchmarks.md; docs/guide.md is fine')).toEqual([
      'test/purge.e2e-spec.ts',
      'bench/sizing.main.ts',
      'docs/benchmarks.md',
    ]);
  });

  it.each([`${PACKAGE_DIR}/README.md`, ...guidePages()])(
    '%s cites no file of the repository that the package does not ship',
    (file) => {
      expect(repositoryPaths(readFileSync(file, 'utf8'))).toEqual([]);
    },
  );
});

describe('the redelivery horizons of operations.md', () => {
  it('say, for each broker the package consumes from, what horizon a handler\'s sender should declare', () => {
    const operations = readFileSync(guidePage('operations.md'), 'utf8').split('\n');
    const table = operations.slice(operations.findIndex((line) => line.startsWith('| transport | what redelivers')));
    const rows = table.slice(2, table.findIndex((line) => line.trim() === ''));
    const transports = rows.map((row) => row.split('|')[1].trim());
    expect(transports).toEqual([expect.stringMatching(/^RabbitMQ/), 'BullMQ', 'Amazon SQS', 'NATS JetStream', 'webhooks']);
    for (const row of rows) {
      expect(row.split('|').filter((cell) => cell.trim() !== '')).toHaveLength(3);
    }
  });
});

describe("the guide's CI statement", () => {
  const variables = JSON.parse(readFileSync('test/variables.json', 'utf8')) as Record<string, { description: string }>;
  const reference = readFileSync(guidePage('reference.md'), 'utf8').split('\n');

  /** A variable's row as test/variables.json describes it: what runs, in place of what, and which suites. */
  const row = (description: string) => {
    const instead = /in place of (.+?)(?: \(|:)/.exec(description)?.[1];
    const suites = /: (the suites .*?)\.(?: |$)/.exec(description)?.[1];
    return `| ${description.split(' (')[0]} | ${instead} | ${suites} |`;
  };

  it('reads a row from a description', () => {
    expect(row('Redis 8 (CI: .ci/x) in place of Redis 7 (the default): the suites that lease on Redis. More.')).toBe(
      '| Redis 8 | Redis 7 | the suites that lease on Redis |',
    );
  });

  it("names each variable of test/variables.json, what it replaces and which suites run on it, and no other", () => {
    const section = reference.slice(reference.indexOf('## CI') + 1);
    const table = section.slice(0, section.findIndex((line) => line.startsWith('## '))).filter((line) => line.startsWith('| '));
    expect(table.slice(2)).toEqual(Object.values(variables).map(({ description }) => row(description)));
  });

  it('says of no peer that every suite runs on each of its versions', () => {
    expect(reference.filter((line) => /every suite on each/.test(line))).toEqual([]);
  });
});

describe('docs/design.md', () => {
  const SOURCE = `${PACKAGE_DIR}/src`;
  const design = readFileSync('docs/design.md', 'utf8');
  const layout = /## Layout\n[\s\S]*?```\n([\s\S]*?)```/.exec(design)?.[1] ?? '';

  it("names every folder of the library's source in its layout", () => {
    const folders = readdirSync(SOURCE, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${relative(SOURCE, join(entry.parentPath, entry.name)).split(sep).join('/')}/`);
    expect(folders.length).toBeGreaterThan(20);
    expect(folders).toContain('transports/http/');
    // A folder is named by its name and a slash (`src/claiming/`, or `http/` among the transports').
    const named = (folder: string) => new RegExp(`[\\s/(,]${folder.split('/').at(-2)}/`).test(layout);
    expect(named('nowhere/')).toBe(false);
    expect(folders.filter((folder) => !named(folder))).toEqual([]);
  });
});

describe("the root README's summary", () => {
  /** The block between a document's summary markers. */
  const summary = (markdown: string) => /<!-- summary[^\n]*-->\n([\s\S]*?)<!-- \/summary -->/.exec(markdown)?.[1];
  /** The package README's text as the root README shows it: each relative link led into the package's folder. */
  const fromRoot = (markdown: string) =>
    markdown.replace(/\]\(([^)]+)\)/g, (link, target: string) =>
      /^[a-z][a-z0-9+.-]*:/i.test(target) ? link : `](${PACKAGE_DIR}/${target.startsWith('#') ? `README.md${target}` : target})`,
    );

  it('leads a relative link into the package, an anchor to its README, and leaves a web address', () => {
    expect(fromRoot('[a](docs/guide.md#x) [b](#transports) [c](https://example.com)')).toBe(
      `[a](${PACKAGE_DIR}/docs/guide.md#x) [b](${PACKAGE_DIR}/README.md#transports) [c](https://example.com)`,
    );
  });

  it("is the package README's summary, its links led into the package", () => {
    const own = summary(readFileSync(`${PACKAGE_DIR}/README.md`, 'utf8'));
    expect(own).toContain('@IdempotentHandler()');
    expect(summary(readFileSync('README.md', 'utf8'))).toBe(fromRoot(own!));
  });

  it('keeps the two commands a newcomer needs: start the demo, run the tests', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toMatch(/^npm ci && npm start +# /m);
    expect(readme).toMatch(/^npm test +# /m);
  });
});
