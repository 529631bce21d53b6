/** One line of the chart: p99 latency (ms) at each offered load (per second). */
export interface ChartSeries {
  name: string;
  points: Array<{ offered: number; p99: number }>;
}

const WIDTH = 720;
const HEIGHT = 420;
const MARGIN = { left: 70, right: 180, top: 30, bottom: 55 };
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/** Powers of ten and their 2× and 5× between `low` and `high`: ticks of a log axis. */
function logTicks(low: number, high: number): number[] {
  const ticks: number[] = [];
  for (let exponent = Math.floor(Math.log10(low)); exponent <= Math.ceil(Math.log10(high)); exponent++)
    for (const step of [1, 2, 5]) {
      const value = step * 10 ** exponent;
      if (value >= low && value <= high) ticks.push(value);
    }
  return ticks;
}

const label = (value: number) =>
  value >= 1000 ? `${value / 1000}k` : value < 1 ? value.toFixed(1) : String(value);
const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;");

/** A self-contained SVG: latency p99 against offered load, both axes logarithmic. */
export function latencyChart(title: string, series: ChartSeries[]): string {
  const points = series.flatMap((one) => one.points);
  const xs = points.map((point) => point.offered);
  const ys = points.map((point) => Math.max(point.p99, 0.1));
  const xLow = 10 ** Math.floor(Math.log10(Math.min(...xs, 10)));
  const xHigh = 10 ** Math.ceil(Math.log10(Math.max(...xs, 100)));
  const yLow = 10 ** Math.floor(Math.log10(Math.min(...ys, 1)));
  const yHigh = 10 ** Math.ceil(Math.log10(Math.max(...ys, 10)));
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (value: number) =>
    MARGIN.left +
    ((Math.log10(value) - Math.log10(xLow)) / (Math.log10(xHigh) - Math.log10(xLow))) * plotWidth;
  const y = (value: number) =>
    MARGIN.top +
    plotHeight -
    ((Math.log10(Math.max(value, yLow)) - Math.log10(yLow)) / (Math.log10(yHigh) - Math.log10(yLow))) *
      plotHeight;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="18" font-size="14">${escape(title)}</text>`,
  ];
  for (const tick of logTicks(xLow, xHigh))
    parts.push(
      `<line x1="${x(tick).toFixed(1)}" y1="${MARGIN.top}" x2="${x(tick).toFixed(1)}" y2="${MARGIN.top + plotHeight}" stroke="#eee"/>`,
      `<text x="${x(tick).toFixed(1)}" y="${MARGIN.top + plotHeight + 16}" text-anchor="middle">${label(tick)}</text>`,
    );
  for (const tick of logTicks(yLow, yHigh))
    parts.push(
      `<line x1="${MARGIN.left}" y1="${y(tick).toFixed(1)}" x2="${MARGIN.left + plotWidth}" y2="${y(tick).toFixed(1)}" stroke="#eee"/>`,
      `<text x="${MARGIN.left - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${label(tick)}</text>`,
    );
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotWidth}" height="${plotHeight}" fill="none" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 12}" text-anchor="middle">offered load (results or messages per second, log)</text>`,
    `<text transform="translate(16 ${MARGIN.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">p99 latency ms (log)</text>`,
  );
  series.forEach((one, index) => {
    const colour = COLOURS[index % COLOURS.length] as string;
    const sorted = [...one.points].sort((a, b) => a.offered - b.offered);
    const path = sorted.map((point) => `${x(point.offered).toFixed(1)},${y(point.p99).toFixed(1)}`).join(" ");
    parts.push(`<polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    for (const point of sorted)
      parts.push(
        `<circle cx="${x(point.offered).toFixed(1)}" cy="${y(point.p99).toFixed(1)}" r="3.5" fill="${colour}"/>`,
      );
    const legendY = MARGIN.top + 14 + index * 20;
    const legendX = MARGIN.left + plotWidth + 14;
    parts.push(
      `<line x1="${legendX}" y1="${legendY - 4}" x2="${legendX + 22}" y2="${legendY - 4}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${legendX + 28}" y="${legendY}">${escape(one.name)}</text>`,
    );
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
