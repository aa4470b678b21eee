// Usage (admin): tokens and cost per day, stacked by model or by user, drawn as plain SVG
// built through the DOM (no chart library); the rows behind it, paged, and the totals.
import { h, clear, append, errorBox } from '../dom.js';
import { useStyles, table, paged, note } from '../admin/kit.js';

const SVG = 'http://www.w3.org/2000/svg';
const COLOURS = ['#2b5797', '#1f7a3a', '#9a6700', '#b42318', '#6941c6', '#0e7490', '#c11574', '#4d7c0f'];
const W = 720;
const H = 260;
const PAD = { left: 56, right: 8, top: 10, bottom: 40 };

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function days(from, to) {
  const out = [];
  for (let d = new Date(`${from}T00:00:00Z`); d <= new Date(`${to}T00:00:00Z`); d.setUTCDate(d.getUTCDate() + 1)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

function value(row, metric) {
  return metric === 'cost' ? Number(row.cost_usd || 0) : Number(row.prompt_tokens || 0) + Number(row.completion_tokens || 0);
}

function fmt(v, metric) {
  if (metric === 'cost') return `$${v < 1 ? v.toFixed(4) : v.toFixed(2)}`;
  return v >= 1e6 ? `${(v / 1e6).toFixed(1)}M` : v >= 1e3 ? `${(v / 1e3).toFixed(1)}k` : String(Math.round(v));
}

/** A stacked bar chart: one bar per day, one segment per series (model or user). */
export function chart(rows, from, to, by, metric) {
  const axis = days(from, to);
  const series = [...new Set(rows.map((r) => (by === 'user' ? r.user || 'owner' : r.model || '?')))].sort();
  const colour = (name) => COLOURS[series.indexOf(name) % COLOURS.length];
  const stacks = new Map(axis.map((d) => [d, []]));
  for (const r of rows) {
    const name = by === 'user' ? r.user || 'owner' : r.model || '?';
    if (stacks.has(r.day)) stacks.get(r.day).push([name, value(r, metric)]);
  }
  const max = Math.max(0, ...[...stacks.values()].map((parts) => parts.reduce((a, [, v]) => a + v, 0))) || 1;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const step = plotW / axis.length;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', id: 'usage-chart', 'aria-label': `${metric === 'cost' ? 'Cost' : 'Tokens'} per day by ${by}, ${from} to ${to}` });
  for (const f of [0, 0.5, 1]) {
    const y = PAD.top + plotH * (1 - f);
    svg.append(s('line', { class: 'axis', x1: PAD.left, x2: W - PAD.right, y1: y, y2: y }),
      s('text', { x: PAD.left - 4, y: y + 4, 'text-anchor': 'end' }, fmt(max * f, metric)));
  }
  axis.forEach((day, i) => {
    let y = PAD.top + plotH;
    const x = PAD.left + i * step + step * 0.15;
    for (const [name, v] of series.flatMap((n) => stacks.get(day).filter(([m]) => m === n))) {
      const hgt = (v / max) * plotH;
      y -= hgt;
      svg.append(s('rect', { class: 'ubar', /* not .bar: app.css sizes that */ x, y, width: Math.max(1, step * 0.7), height: Math.max(0, hgt), fill: colour(name), 'data-day': day, 'data-series': name },
        s('title', {}, `${day} · ${name}: ${fmt(v, metric)}`)));
    }
    const every = Math.ceil(axis.length / 10);
    if (i % every === 0) svg.append(s('text', { x: x + step * 0.35, y: H - PAD.bottom + 16, 'text-anchor': 'middle' }, day.slice(5)));
  });
  const legend = h('div', { class: 'legend' }, series.map((name) => {
    const sw = h('span', { class: 'swatch' });
    sw.style.background = colour(name); // CSSOM, allowed by the CSP
    return h('span', {}, sw, name);
  }));
  return h('div', { class: 'chart' }, svg, legend);
}

export default {
  id: 'usage',
  title: 'Usage',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const error = note();
    const range = h('select', { id: 'usage-range', 'aria-label': 'Days' }, [7, 30, 90, 365].map((d) => h('option', { value: d, selected: d === 30 }, `last ${d} days`)));
    const by = h('select', { id: 'usage-by', 'aria-label': 'Stack by' }, h('option', { value: 'model' }, 'by model'), h('option', { value: 'user' }, 'by user'));
    const metric = h('select', { id: 'usage-metric', 'aria-label': 'Measure' }, h('option', { value: 'tokens' }, 'tokens'), h('option', { value: 'cost' }, 'cost (USD)'));
    const totals = h('dl', { class: 'facts card', id: 'usage-totals' });
    const graph = h('div', { id: 'usage-graph' });
    const rowsBox = h('div', { id: 'usage-rows' });
    root.append(h('h1', {}, 'Usage'), h('div', { class: 'row' }, range, by, metric), error, totals, graph, h('h2', {}, 'By day, model and user'), rowsBox);
    let body = null;

    function draw() {
      clear(graph).append(chart(body.usage, body.from, body.to, by.value, metric.value));
    }

    async function load() {
      error.textContent = '';
      const to = new Date();
      const from = new Date(to.getTime() - (Number(range.value) - 1) * 86400000);
      const iso = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
      try {
        body = await ctx.api('GET', `/api/usage?from=${iso(from)}&to=${iso(to)}&group_by=day,model,user`);
      } catch (err) { clear(graph).append(errorBox(err)); return; }
      body.from = body.from || iso(from);
      body.to = body.to || iso(to);
      const t = body.totals || {};
      append(clear(totals), [
        h('dt', {}, 'Tokens'), h('dd', {}, `${(t.total_tokens ?? 0).toLocaleString()} (${(t.prompt_tokens ?? 0).toLocaleString()} in, ${(t.completion_tokens ?? 0).toLocaleString()} out)`),
        h('dt', {}, 'Model calls'), h('dd', {}, String(t.calls ?? 0)),
        h('dt', {}, 'Cost'), h('dd', {}, t.cost_usd === null || t.cost_usd === undefined ? 'unknown (no model.pricing)' : fmt(t.cost_usd, 'cost')),
        t.unpriced_models && t.unpriced_models.length ? [h('dt', {}, 'Unpriced'), h('dd', {}, t.unpriced_models.join(', '))] : null]);
      draw();
      clear(rowsBox);
      const rows = body.usage.slice().sort((a, b) => b.day.localeCompare(a.day));
      paged(rowsBox, rows, (page) => table([
        ['Day', (r) => r.day], ['Model', (r) => r.model || ''], ['User', (r) => r.user || 'owner'],
        ['Prompt', (r) => String(r.prompt_tokens ?? 0)], ['Completion', (r) => String(r.completion_tokens ?? 0)],
        ['Cost', (r) => (r.cost_usd === null || r.cost_usd === undefined ? '—' : fmt(r.cost_usd, 'cost'))],
      ], page), 25);
    }
    range.addEventListener('change', load);
    by.addEventListener('change', () => body && draw());
    metric.addEventListener('change', () => body && draw());
    await load();
  },
};
