import type { BenchResults } from './results.js';

const WIDTH = 980;
const LABEL_WIDTH = 190;
const BAR_AREA = 560;
const BAR_HEIGHT = 20;
const BAR_GAP = 6;
const COLORS = ['#8da0cb', '#fc8d62', '#66c2a5', '#b3b3b3'];
const VERDICT_COLORS = { met: '#1a7f37', missed: '#cf222e', none: '#57606a' };

/**
 * The results as an SVG bar chart, drawn by hand: one group of horizontal bars per measured
 * comparison, each group to its own scale, its ratio and floor under it; then the cases that
 * were not measured, and why.
 */
export function renderChart(results: BenchResults): string {
  const parts: string[] = [];
  let y = 28;
  const text = (x: number, baseline: number, content: string, attributes = '') =>
    parts.push(`<text x="${x}" y="${baseline}" ${attributes}>${escapeXml(content)}</text>`);

  text(16, y, `nest-idempotency benchmarks · ${results.date.slice(0, 10)}${results.quick ? ' · QUICK TRIAL, not comparable' : ''}`, 'font-size="18" font-weight="bold"');
  y += 22;
  const { machine, database, method } = results;
  const { headline, beside } = results.appRuntimes;
  const apps = `apps on Node ${headline.version}${beside ? ` (case 1 also ${beside.version})` : ''}, runner ${machine.node}`;
  text(16, y, `${machine.cpus} × ${machine.cpuModel} · ${machine.memoryGiB} GiB · ${apps} · PostgreSQL ${database.version} (${database.server})`, 'fill="#57606a"');
  y += 18;
  text(
    16,
    y,
    `medians of ${method.rounds} interleaved rounds of ${method.roundSeconds} s per variant, ${method.connections} connections (autocannon) · total ${Math.round(results.totalSeconds)} s`,
    'fill="#57606a"',
  );
  y += 34;

  for (const result of results.cases) {
    if (result.status !== 'measured') {
      text(16, y, `${result.id} · ${result.title}: ${result.status}${result.reason ? ` (${result.reason.split('\n')[0]})` : ''}`, 'fill="#57606a"');
      y += 24;
      continue;
    }
    for (const group of result.chart ?? []) {
      text(16, y, group.title, 'font-weight="bold"');
      y += 10;
      const max = Math.max(...group.bars.map((bar) => bar.value), 1);
      group.bars.forEach((bar, i) => {
        const width = Math.max(1, (bar.value / max) * BAR_AREA);
        parts.push(`<rect x="${LABEL_WIDTH}" y="${y}" width="${width.toFixed(1)}" height="${BAR_HEIGHT}" fill="${COLORS[(bar.series ?? i) % COLORS.length]}"/>`);
        text(LABEL_WIDTH - 8, y + 15, bar.label, 'text-anchor="end"');
        text(LABEL_WIDTH + width + 6, y + 15, `${bar.value.toLocaleString('en-US', { maximumFractionDigits: bar.value >= 100 ? 0 : bar.value >= 10 ? 1 : 2 })} ${group.unit}`);
        y += BAR_HEIGHT + BAR_GAP;
      });
      y += 12;
      const verdict = group.met === undefined ? 'none' : group.met ? 'met' : 'missed';
      text(LABEL_WIDTH, y, `${group.note}${group.met === undefined ? '' : group.met ? ' · met' : ' · NOT MET'}`, `fill="${VERDICT_COLORS[verdict]}"`);
      y += 30;
    }
  }
  const height = y;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="13">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function escapeXml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
