import { choiceLabel } from '../resource-pages/widgets.ts';

/**
 * A small horizontal bar chart of a resource's rows per status, drawn as SVG on the server (no
 * script, nothing the page's content security policy refuses: no style attribute). Each bar has
 * its status written before it and its count beside it as text, so a screen reader reads "Open 12"
 * bar by bar; the drawing itself names the chart (role="img" would hide those texts, so it is a
 * list of its bars instead). Bars are drawn in the text's colour, so they keep its contrast in
 * either colour scheme.
 */

export interface StatusCount {
  value: string;
  count: number;
}

const ROW = 22;
const LABEL_WIDTH = 110;
const BAR_WIDTH = 120;
const COUNT_GAP = 6;
const WIDTH = LABEL_WIDTH + BAR_WIDTH + 60;

const escapeXml = (text: string): string =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** The chart's SVG markup: one bar per status in declared order (zero counts too), `title` naming it. */
export function statusChart(title: string, counts: readonly StatusCount[]): string {
  const most = Math.max(1, ...counts.map((c) => c.count));
  const bars = counts.map((c, i) => {
    const y = i * ROW;
    const width = c.count === 0 ? 0 : Math.max(2, Math.round((c.count / most) * BAR_WIDTH));
    const label = choiceLabel(c.value);
    return `<g role="listitem" data-status="${escapeXml(c.value)}" data-count="${c.count}">
  <text x="${LABEL_WIDTH - COUNT_GAP}" y="${y + 15}" text-anchor="end" fill="currentColor">${escapeXml(label)}</text>
  <rect x="${LABEL_WIDTH}" y="${y + 4}" width="${width}" height="${ROW - 8}" rx="2" fill="currentColor" opacity="0.6"/>
  <text x="${LABEL_WIDTH + width + COUNT_GAP}" y="${y + 15}" fill="currentColor">${c.count}</text>
</g>`;
  });
  const height = Math.max(ROW, counts.length * ROW);
  return `<svg class="status-chart" role="list" aria-label="${escapeXml(title)}" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" xmlns="http://www.w3.org/2000/svg" font-size="13">
${bars.join('\n')}
</svg>`;
}
