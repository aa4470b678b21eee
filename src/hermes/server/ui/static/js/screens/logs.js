// Logs (admin): the server's recent log lines and a live tail (SSE), filtered by level and
// text; secrets arrive already masked by the server.
import { h, clear } from '../dom.js';
import { useStyles, note } from '../admin/kit.js';

const KEEP = 1000;

function lineNode(line) {
  const ts = line.ts ? new Date(line.ts).toLocaleTimeString() : '';
  return h('span', { class: `line lvl-${line.level}`, 'data-id': line.id },
    `${ts} ${String(line.level).toUpperCase()} ${line.logger}: ${line.message}\n`);
}

export default {
  id: 'logs',
  title: 'Logs',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const error = note();
    const level = h('select', { id: 'log-level', 'aria-label': 'Lowest level' },
      ['debug', 'info', 'warning', 'error'].map((l) => h('option', { value: l, selected: l === 'debug' }, `${l} and up`)));
    const text = h('input', { type: 'search', id: 'log-filter', placeholder: 'Filter: words in the logger or message', 'aria-label': 'Filter log lines' });
    const pause = h('button', { type: 'button', id: 'log-pause', 'aria-pressed': 'false' }, 'Pause');
    const state = h('span', { class: 'muted', id: 'log-state', 'aria-live': 'polite' });
    const out = h('pre', { class: 'logs', id: 'log-lines', tabindex: '0', 'aria-label': 'Log lines' });
    const form = h('form', { class: 'row', role: 'search' }, level, text, h('button', { type: 'submit' }, 'Apply'), pause, state);
    root.append(h('h1', {}, 'Logs'),
      h('p', { class: 'muted' }, 'What this server logged lately (kept in memory, newest last); new lines appear as they are logged.'),
      form, error, out);
    let controller = null;
    let paused = false;
    let last = 0;

    function add(line) {
      const stick = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
      out.append(lineNode(line));
      last = Math.max(last, line.id);
      while (out.childNodes.length > KEEP) out.removeChild(out.firstChild);
      if (stick) out.scrollTop = out.scrollHeight;
    }

    function query() {
      const q = text.value.trim();
      return `level=${encodeURIComponent(level.value)}${q ? `&q=${encodeURIComponent(q)}` : ''}`;
    }

    async function follow() {
      if (controller) controller.abort();
      const mine = new AbortController();
      controller = mine;
      state.textContent = 'live';
      try {
        await ctx.stream(`/api/logs/stream?${query()}&after=${last}`, null, (line) => add(line), { signal: mine.signal });
        if (controller === mine) state.textContent = 'the stream ended; reload to follow again';
      } catch (err) {
        if (mine.signal.aborted) return;
        state.textContent = '';
        error.textContent = err.message;
      }
    }

    async function start() {
      if (controller) controller.abort();
      controller = null;
      error.textContent = '';
      clear(out);
      last = 0;
      try {
        const body = await ctx.api('GET', `/api/logs?${query()}&limit=500`);
        for (const line of body.lines) add(line);
        last = Math.max(last, body.last_id || 0);
        if (!body.lines.length) state.textContent = 'no lines yet';
      } catch (err) { error.textContent = err.message; return; }
      if (!paused) follow();
    }

    form.addEventListener('submit', (e) => { e.preventDefault(); start(); });
    level.addEventListener('change', start);
    pause.addEventListener('click', () => {
      paused = !paused;
      pause.setAttribute('aria-pressed', String(paused));
      pause.textContent = paused ? 'Resume' : 'Pause';
      if (paused) { if (controller) controller.abort(); controller = null; state.textContent = 'paused'; } else follow();
    });
    await start();
    return () => { if (controller) controller.abort(); controller = null; };
  },
};
