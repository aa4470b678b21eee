// Sessions: search across every session of the scope, a transcript with compression
// summaries and undone ranges shown; rename, fork, export and delete (with a confirm).
import { h, clear, ago, when, errorBox, pager } from '../dom.js';
import { scopeHeaders, userPicker } from '../userpick.js';

const PAGE = 50;

function path(id, rest = '') {
  return `/api/sessions/${encodeURIComponent(id)}${rest}`;
}

async function listView(root, ctx) {
  const q = h('input', { type: 'search', id: 'session-search', placeholder: 'Words, or what was meant', 'aria-label': 'Search sessions' });
  const mode = h('select', { id: 'session-search-mode', 'aria-label': 'Search by' },
    h('option', { value: 'words' }, 'by words'), h('option', { value: 'meaning' }, 'by meaning'));
  const list = h('ul', { class: 'plain', id: 'session-list' });
  let controls = null;
  async function reload() {
    clear(list);
    if (controls) controls.remove();
    const query = q.value.trim();
    const p = pager(list, async (offset, size) => {
      const url = `/api/sessions?limit=${size}&offset=${offset}${query ? `&q=${encodeURIComponent(query)}&mode=${mode.value}` : ''}`;
      // the scope as chosen now: the picker's change reloads this list
      return (await ctx.api('GET', url, undefined, { headers: scopeHeaders(ctx) })).sessions;
    }, (s) => h('li', { class: 'card' },
      h('a', { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id),
      ' ', h('span', { class: 'muted' }, `${s.id} · ${s.source} · ${s.message_count} messages · ${ago(s.updated_at)}`),
      s.match && s.match.snippet ? h('p', { class: 'muted' }, s.match.snippet) : null,
    ), PAGE);
    controls = p.controls;
    list.after(controls);
    await p.load();
  }
  const form = h('form', { class: 'row', role: 'search' }, q, mode, h('button', { type: 'submit' }, 'Search'));
  form.addEventListener('submit', (e) => { e.preventDefault(); reload(); });
  root.append(h('h1', {}, 'Sessions'), userPicker(ctx, reload), form, list);
  await reload();
}

function messageNode(m, summaries) {
  const items = [];
  const summary = summaries.get(m.index);
  if (summary) items.push(h('div', { class: 'msg system summary' }, h('strong', {}, 'Compression summary: '), summary));
  let text = m.content || '';
  if (m.role === 'tool') text = `${m.tool_name || 'tool'} → ${text}`;
  for (const call of m.tool_calls || []) {
    const fn = call.function || call;
    text += `${text ? '\n' : ''}→ ${fn.name}(${fn.arguments || ''})`;
  }
  const classes = [m.hidden ? 'undone' : '', m.compressed ? 'compressed' : ''].join(' ');
  items.push(h('div', { class: `msg ${m.role} ${classes}`.trim(), id: `turn-${m.index}`, tabindex: '-1', 'data-index': m.index },
    h('div', { class: 'muted' }, `#${m.index} ${m.role} · ${when(m.timestamp)}${m.hidden ? ' · undone' : ''}${m.compressed ? ' · compressed' : ''}`,
      // the model that wrote an assistant message (a fallback may have answered), as text
      m.model ? h('span', { class: 'model', title: 'the model that answered' }, ` · ${m.model}`) : null),
    text));
  return items;
}

async function detailView(root, ctx, id, focus) {
  const headers = scopeHeaders(ctx);
  const opts = { headers };
  const note = h('p', { class: 'error', role: 'alert' });
  let info;
  try {
    info = (await ctx.api('GET', path(id), undefined, opts)).session;
  } catch (err) {
    root.append(h('p', {}, h('a', { href: '#/sessions' }, '← All sessions')), errorBox(err));
    return;
  }
  const titleInput = h('input', { id: 'rename-input', value: info.title || '', 'aria-label': 'Title', maxlength: '200' });
  const heading = h('h1', { id: 'session-title' }, info.title || id);
  const rename = h('form', { class: 'row' }, titleInput, h('button', { type: 'submit', id: 'rename' }, 'Rename'));
  rename.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const res = await ctx.api('PATCH', path(id), { title: titleInput.value }, opts);
      heading.textContent = res.session.title || id;
    } catch (err) { note.textContent = err.message; }
  });
  const actions = h('div', { class: 'row' },
    h('a', { href: `#/chat/${encodeURIComponent(id)}` }, 'Continue in chat'),
    h('button', { type: 'button', id: 'fork', onclick: async () => {
      try {
        const res = await ctx.api('POST', path(id, '/fork'), {}, opts);
        ctx.navigate(`#/sessions/${encodeURIComponent(res.session.id)}`);
      } catch (err) { note.textContent = err.message; }
    } }, 'Fork'),
    h('button', { type: 'button', id: 'export', onclick: async () => {
      try {
        const text = await ctx.api('GET', path(id, '/export'), undefined, opts);
        const blob = new Blob([typeof text === 'string' ? text : JSON.stringify(text)], { type: 'application/x-ndjson' });
        const a = h('a', { download: `${id.replace(/[^A-Za-z0-9._-]/g, '_')}.jsonl` });
        a.href = URL.createObjectURL(blob);
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(a.href), 1000);
      } catch (err) { note.textContent = err.message; }
    } }, 'Export (JSONL)'),
    h('button', { type: 'button', id: 'delete', class: 'danger', onclick: async () => {
      if (!window.confirm(`Delete session “${id}” and all its messages? This cannot be undone.`)) return;
      try {
        await ctx.api('DELETE', path(id), undefined, opts);
        ctx.navigate('#/sessions');
      } catch (err) { note.textContent = err.message; }
    } }, 'Delete'),
  );
  const facts = h('p', { class: 'muted' }, `${id} · ${info.source} · ${info.message_count} messages · started ${when(info.started_at)}`,
    info.parent_session_id ? [' · forked from ', h('a', { href: `#/sessions/${encodeURIComponent(info.parent_session_id)}` }, info.parent_session_id)] : null);
  const transcript = h('div', { class: 'log transcript', id: 'transcript' });
  const extra = h('div', {});
  root.append(h('p', {}, h('a', { href: '#/sessions' }, '← All sessions')), heading, facts, rename, actions, note, extra, transcript);

  // A long transcript opens at its newest messages (or around the turn asked for);
  // "Older messages" and "Newer messages" page through the rest, 100 at a time.
  const size = 100;
  const total = info.message_count || 0;
  const start = focus !== undefined ? Math.max(0, focus - size / 2) : Math.max(0, total - size);
  let first = start; // the lowest index shown
  let next = start; // the next index to load going newer
  const older = h('button', { type: 'button', id: 'older' }, 'Older messages');
  const newer = h('button', { type: 'button', class: 'more', id: 'newer' }, 'Newer messages');
  transcript.before(older);
  transcript.after(newer);
  let summaries = null;
  async function page(offset, limit) {
    const got = await ctx.api('GET', path(id, `/messages?offset=${offset}&limit=${limit}`), undefined, opts);
    if (summaries === null) {
      const shown = (got.compressions || []).filter((c) => c.summary);
      summaries = new Map(shown.map((c) => [c.head_end ?? c.upto ?? 0, c.summary]));
      if ((got.hidden_ranges || []).length) {
        extra.append(h('p', { class: 'muted' }, 'Undone turns (kept, not in the prompt): ',
          got.hidden_ranges.map(([a, b]) => `#${a}–#${b - 1}`).join(', ')));
      }
      if (shown.length && !got.messages.some((m) => summaries.has(m.index))) {
        for (const c of shown) extra.append(h('div', { class: 'msg system summary' }, h('strong', {}, 'Compression summary: '), c.summary));
        summaries = new Map(); // shown above, once
      }
    }
    return got.messages;
  }
  async function loadNewer() {
    const got = await page(next, size);
    for (const m of got) transcript.append(...messageNode(m, summaries));
    next += got.length;
    newer.hidden = got.length < size || next >= total;
  }
  async function loadOlder() {
    const from = Math.max(0, first - size);
    const got = await page(from, first - from);
    const anchor = transcript.firstChild;
    const height = document.documentElement.scrollHeight;
    for (const m of got) for (const node of messageNode(m, summaries)) transcript.insertBefore(node, anchor);
    window.scrollBy(0, document.documentElement.scrollHeight - height); // stay on what was read
    first = from;
    older.hidden = first === 0;
    if (!older.hidden) older.focus();
  }
  const failed = (err) => { note.textContent = err.message; };
  older.addEventListener('click', () => loadOlder().catch(failed));
  newer.addEventListener('click', () => loadNewer().catch(failed));
  older.hidden = first === 0;
  await loadNewer();
  if (focus !== undefined) {
    const target = document.getElementById(`turn-${focus}`);
    if (target) { target.classList.add('focus'); target.scrollIntoView({ block: 'center' }); target.focus(); }
  }
}

export default {
  id: 'sessions',
  title: 'Sessions',
  async render(root, ctx) {
    const [id, turn] = ctx.params;
    if (id) await detailView(root, ctx, id, turn !== undefined ? Number(turn) : undefined);
    else await listView(root, ctx);
  },
};
