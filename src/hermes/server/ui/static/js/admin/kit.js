// Shared pieces of the admin screens (users, cron, keys, logs, gateway, tools, skills, usage):
// tables, a client-side pager for lists the API returns whole, a typed confirm step, and
// the screens' own stylesheet (same origin, so the CSP's style-src 'self' allows it).
import { h, clear, append } from '../dom.js';

let styled = false;

/** Load admin.css once (a <link> to this origin's file; no inline style). */
export function useStyles() {
  if (styled) return;
  styled = true;
  document.head.append(h('link', { rel: 'stylesheet', href: new URL('../../admin.css', import.meta.url).href }));
}

/** A table: columns [[label, (row) => node|text]], rows, optional row attrs. */
export function table(columns, rows, attrs = () => ({}), tableAttrs = {}) {
  return h('div', { class: 'scroll' }, h('table', { class: 'admin', ...tableAttrs },
    h('thead', {}, h('tr', {}, columns.map(([label]) => h('th', { scope: 'col' }, label)))),
    h('tbody', {}, rows.map((row) => h('tr', attrs(row),
      columns.map(([label, cell]) => h('td', { 'data-label': label }, cell(row)))))),
  ));
}

/** Show `items` a page at a time in `where` (rendered by draw(pageItems)), with Prev/Next. */
export function paged(where, items, draw, size = 25) {
  let page = 0;
  const pages = Math.max(1, Math.ceil(items.length / size));
  const info = h('span', { class: 'muted' });
  const prev = h('button', { type: 'button', class: 'prev', 'aria-label': 'Previous page' }, '‹ Prev');
  const next = h('button', { type: 'button', class: 'next', 'aria-label': 'Next page' }, 'Next ›');
  const body = h('div', {});
  function show() {
    append(clear(body), [draw(items.slice(page * size, (page + 1) * size))]);
    info.textContent = items.length ? `${page * size + 1}–${Math.min(items.length, (page + 1) * size)} of ${items.length}` : 'Nothing here yet.';
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  prev.addEventListener('click', () => { page -= 1; show(); });
  next.addEventListener('click', () => { page += 1; show(); });
  show();
  where.append(body, pages > 1 ? h('div', { class: 'pager' }, prev, info, next) : h('p', { class: 'muted' }, info));
}

/** A confirm step for something that cannot be undone: the button works only once the
 * exact `word` is typed. onConfirm() runs on the click (or Enter); Escape calls onCancel(). */
export function typedConfirm({ word, prompt, action, onConfirm, onCancel, id }) {
  const input = h('input', { type: 'text', id: `${id}-input`, autocomplete: 'off', spellcheck: 'false', 'aria-label': prompt });
  const go = h('button', { type: 'submit', class: 'danger', id: `${id}-go`, disabled: true }, action);
  input.addEventListener('input', () => { go.disabled = input.value !== word; });
  const form = h('form', { class: 'card confirm', id },
    h('label', { for: `${id}-input` }, prompt), h('div', { class: 'row' }, input, go));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (input.value === word) onConfirm();
  });
  form.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && onCancel) { e.preventDefault(); onCancel(); }
  });
  setTimeout(() => input.focus(), 0);
  return form;
}

/** seconds (float) or ISO text → a local date and time, '' for none. */
export function stamp(value) {
  if (value === null || value === undefined || value === '') return '';
  const d = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

export function badge(state) {
  const s = String(state || 'unknown');
  return h('span', { class: `badge status-${s.replace(/[^a-z_]/gi, '_')}` }, s);
}

export function note() {
  return h('p', { class: 'error', role: 'alert' });
}
