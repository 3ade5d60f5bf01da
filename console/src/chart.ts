import { h, s, usd } from "./dom";

// A stacked bar chart: one bar per day, one segment per series (model).
// Drawn as SVG by hand: one chart type, about sixty lines, where a charting
// library would add more to the binary than the rest of the console. Each
// segment carries its exact value in a <title> (the tooltip) and data-*
// attributes, and the figures are also in the table beside the chart.

export interface Point {
  day: string; // YYYY-MM-DD
  series: string;
  value: number;
  label: string; // the exact value as shown
}

const COLORS = ["#3b6fd4", "#e07b39", "#3aa57a", "#b4479d", "#c9a227", "#5a5f73", "#d64545", "#4bb3c4"];

// days are the bars to draw, in order (every day of the range, so gaps
// show); days with points outside it are added.
export function stackedBars(points: Point[], title: string, range: string[] = []): HTMLElement {
  const days = [...new Set([...range, ...points.map((p) => p.day)])].sort();
  const series = [...new Set(points.map((p) => p.series))].sort();
  const color = new Map(series.map((n, i) => [n, COLORS[i % COLORS.length]]));
  const totals = new Map<string, number>();
  for (const p of points) totals.set(p.day, (totals.get(p.day) ?? 0) + p.value);
  const max = Math.max(0, ...totals.values());
  const W = 760, H = 240, left = 84, bottom = 28, top = 10;
  const plotH = H - bottom - top;
  const bw = days.length ? Math.max(2, Math.min(48, (W - left - 8) / days.length - 6)) : 0;
  // Label every day while they fit, else about ten of them.
  const every = Math.max(1, Math.ceil(days.length / 10));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title, class: "chart" });
  // Axis with the maximum and zero.
  svg.appendChild(s("line", { x1: left, y1: top, x2: left, y2: H - bottom, class: "axis" }));
  svg.appendChild(s("line", { x1: left, y1: H - bottom, x2: W, y2: H - bottom, class: "axis" }));
  svg.appendChild(s("text", { x: left - 6, y: top + 10, "text-anchor": "end", class: "tick" }, usd(max)));
  svg.appendChild(s("text", { x: left - 6, y: H - bottom, "text-anchor": "end", class: "tick" }, "$0"));
  days.forEach((day, i) => {
    const x = left + 6 + i * (bw + 6);
    let y = H - bottom;
    for (const p of points.filter((q) => q.day === day)) {
      const hgt = max > 0 ? Math.max(1, (p.value / max) * plotH) : 0;
      y -= hgt;
      const rect = s(
        "rect",
        { x, y, width: bw, height: hgt, fill: color.get(p.series)!, class: "bar", "data-day": day, "data-series": p.series, "data-value": p.label },
        s("title", {}, `${day} · ${p.series} · ${p.label}`),
      );
      svg.appendChild(rect);
    }
    if (i % every === 0) svg.appendChild(s("text", { x: x + bw / 2, y: H - bottom + 16, "text-anchor": "middle", class: "tick" }, day.slice(5)));
  });
  const legend = h(
    "ul",
    { class: "legend" },
    series.map((n) => {
      // CSSOM, not a style attribute: the CSP allows no inline styles.
      const sw = h("span", { class: "swatch" });
      sw.style.background = color.get(n)!;
      return h("li", {}, sw, n);
    }),
  );
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title), points.length ? svg : h("p", { class: "muted" }, "No usage in this period."), legend);
}
