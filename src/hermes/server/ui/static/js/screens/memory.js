// Memory: both notes with usage bars, editing an entry, the history with diffs and revert,
// and "why do you believe this" (an entry → the version and the session turn that wrote it).
// A scoped key's user sees this as "what Hermes remembers about me", with "forget me".
import { h, clear, when, errorBox } from '../dom.js';
import { scopeHeaders, userPicker } from '../userpick.js';

const NAMES = { memory: 'Hermes’ notes', user: 'About the user' };

function usage(notes) {
  const pct = notes.limit ? Math.min(100, Math.round((100 * notes.chars) / notes.limit)) : 0;
  const bar = h('div', { class: `bar${pct >= 90 ? ' full' : ''}`, role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(notes.limit), 'aria-valuenow': String(notes.chars), 'aria-label': 'Usage' }, h('span', {}));
  bar.firstChild.style.width = `${pct}%`; // CSSOM, allowed by the CSP (no inline style attribute)
  return [bar, h('p', { class: 'muted' }, `${pct}% — ${notes.chars.toLocaleString()} / ${notes.limit.toLocaleString()} chars`)];
}

function diffNode(text) {
  const pre = h('pre', { class: 'diff' });
  for (const line of (text || '').split('\n')) {
    const cls = line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : '';
    pre.append(h('span', { class: cls }, `${line}\n`));
  }
  return pre;
}

function turnLink(v) {
  if (!v.session_id) return h('span', { class: 'muted' }, v.key ? `via API key ${v.key}` : 'not from a session');
  const turn = v.turn !== undefined && v.turn !== null ? `/${v.turn}` : '';
  return h('a', { href: `#/sessions/${encodeURIComponent(v.session_id)}${turn}`, class: 'turn-link' },
    `session ${v.session_id}${turn ? `, turn #${v.turn}` : ''}`);
}

export default {
  id: 'memory',
  title: 'Memory',
  async render(root, ctx) {
    const opts = () => ({ headers: scopeHeaders(ctx) });
    const note = h('p', { class: 'error', role: 'alert', id: 'memory-error' });
    const notesBox = h('div', { class: 'grid2', id: 'notes' });
    const historyList = h('ul', { class: 'plain', id: 'history' });
    const detail = h('div', { id: 'version-detail' });
    const heading = ctx.isAdmin ? 'Memory' : 'What Hermes remembers about me';
    root.append(h('h1', {}, heading), userPicker(ctx, () => reload()), note, notesBox);

    if (!ctx.isAdmin) {
      root.append(h('p', {}, h('a', { href: '#/sessions' }, 'My sessions'), ' · You can correct any entry below.'));
    }

    async function change(body) {
      note.textContent = '';
      try {
        await ctx.api('POST', '/api/memory', body, opts());
        await reload();
      } catch (err) { note.textContent = err.message; }
    }

    async function why(target, entry, where) {
      clear(where);
      try {
        const { versions } = await ctx.api('GET', `/api/memory/history?target=${target}&entry=${encodeURIComponent(entry.slice(0, 2000))}&limit=5`, undefined, opts());
        if (!versions.length) { where.append(h('p', { class: 'muted' }, 'No recorded version wrote this (it predates the history).')); return; }
        for (const v of versions) {
          where.append(h('p', { class: 'why' }, `Version ${v.id} by ${v.actor} at ${when(v.at)}${v.reason ? ` (${v.reason})` : ''} — `, turnLink(v), ' ',
            h('button', { type: 'button', onclick: () => showVersion(v.id) }, 'Show the change')));
        }
      } catch (err) { where.append(errorBox(err)); }
    }

    function entryRow(target, entry) {
      const text = h('div', { class: 'text' }, entry);
      const whyBox = h('div', {});
      const row = h('li', { class: 'entry', 'data-target': target });
      const edit = h('button', { type: 'button', class: 'edit' }, 'Edit');
      edit.addEventListener('click', () => {
        const area = h('textarea', { 'aria-label': 'Entry text', class: 'edit-text' });
        area.value = entry;
        const save = h('button', { type: 'button', class: 'primary save' }, 'Save');
        const cancel = h('button', { type: 'button' }, 'Cancel');
        const editor = h('div', { class: 'text' }, area, h('div', { class: 'row' }, save, cancel));
        text.replaceWith(editor);
        area.focus();
        save.addEventListener('click', () => change({ action: 'replace', target, old_text: entry, content: area.value }));
        cancel.addEventListener('click', () => editor.replaceWith(text));
      });
      row.append(h('div', { class: 'text-wrap' }, text, whyBox),
        h('div', { class: 'row' }, edit,
          h('button', { type: 'button', class: 'why-btn', onclick: () => why(target, entry, whyBox) }, 'Why?'),
          h('button', { type: 'button', class: 'danger', onclick: () => {
            if (window.confirm('Remove this entry?')) change({ action: 'remove', target, old_text: entry });
          } }, 'Remove')));
      return row;
    }

    function notesCard(target, notes) {
      const list = h('ul', { class: 'plain' }, notes.entries.map((e) => entryRow(target, e)));
      if (!notes.entries.length) list.append(h('li', { class: 'muted' }, 'Nothing yet.'));
      const add = h('textarea', { 'aria-label': `New entry in ${NAMES[target]}`, class: 'add-text' });
      const form = h('form', { class: 'composer' }, add, h('button', { type: 'submit' }, 'Add'));
      form.addEventListener('submit', (e) => { e.preventDefault(); if (add.value.trim()) change({ action: 'add', target, content: add.value }); });
      return h('section', { class: 'card', id: `notes-${target}` }, h('h2', {}, NAMES[target]), usage(notes), list, form);
    }

    async function showVersion(id) {
      clear(detail);
      try {
        const v = await ctx.api('GET', `/api/memory/history/${id}`, undefined, opts());
        const revert = h('button', { type: 'button', class: 'danger', id: 'revert' }, 'Revert this change');
        revert.addEventListener('click', async () => {
          try {
            await ctx.api('POST', '/api/memory/revert', { version: v.id }, opts());
            await reload();
          } catch (err) { note.textContent = err.message; }
        });
        detail.append(h('div', { class: 'card', 'data-version': v.id },
          h('h2', {}, `Version ${v.id} · ${v.target}`),
          h('p', { class: 'muted' }, `${v.actor} · ${when(v.at)}${v.reason ? ` · ${v.reason}` : ''}${v.reverts ? ` · reverts ${v.reverts}` : ''} · `, turnLink(v)),
          diffNode(v.diff), revert));
        detail.scrollIntoView({ block: 'nearest' });
      } catch (err) { detail.append(errorBox(err)); }
    }

    async function reload() {
      // Both reads at once: the screen draws after one round trip, not two.
      const [notes, past] = await Promise.allSettled([
        ctx.api('GET', '/api/memory', undefined, opts()),
        ctx.api('GET', '/api/memory/history?limit=50', undefined, opts()),
      ]);
      clear(notesBox);
      clear(historyList);
      clear(detail);
      if (notes.status === 'fulfilled') {
        notesBox.append(notesCard('user', notes.value.user), notesCard('memory', notes.value.memory));
      } else notesBox.append(errorBox(notes.reason));
      if (past.status === 'rejected') { historyList.append(h('li', {}, errorBox(past.reason))); return; }
      const { versions } = past.value;
      for (const v of versions) {
        historyList.append(h('li', { class: 'entry' },
          h('button', { type: 'button', class: 'version', 'data-version': v.id, onclick: () => showVersion(v.id) }, `#${v.id}`),
          h('span', { class: 'text' }, `${v.target} · ${v.actor} · ${when(v.at)}${v.reason ? ` · ${v.reason}` : ''}${v.reverts ? ` · reverts #${v.reverts}` : ''}`)));
      }
      if (!versions.length) historyList.append(h('li', { class: 'muted' }, 'No changes recorded yet.'));
    }

    root.append(h('h2', {}, 'History'), detail, historyList);
    if (!ctx.isAdmin) {
      const forget = h('button', { type: 'button', class: 'danger', id: 'forget-me' }, 'Forget me');
      forget.addEventListener('click', async () => {
        if (!window.confirm('Forget everything Hermes holds of you — notes, sessions, jobs — and end this key? This cannot be undone.')) return;
        try {
          const res = await ctx.api('DELETE', '/api/me');
          clear(root).append(h('h1', {}, 'Forgotten'), h('p', {}, `Hermes no longer holds anything of ${res.forgotten}. This key no longer works.`));
        } catch (err) { note.textContent = err.message; }
      });
      root.append(h('section', { class: 'card' }, h('h2', {}, 'Forget me'),
        h('p', {}, 'Removes your notes and their history, your sessions and messages, your jobs, and this key.'), forget));
    }
    await reload();
  },
};
