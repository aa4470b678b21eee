// Users (admin): every end user with their activity, an archive of one (zip download), and
// forgetting one everywhere behind a confirm step (type the user id).
import { h, clear, errorBox } from '../dom.js';
import { base } from '../api.js';
import { useStyles, table, paged, typedConfirm, stamp, note } from '../admin/kit.js';

function exportLink(id) {
  return h('a', { href: `${base}/api/users/${encodeURIComponent(id)}/export`, download: `hermes-user-${id}.zip`, class: 'export' }, 'Export');
}

export default {
  id: 'users',
  title: 'Users',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const error = note();
    const list = h('div', { id: 'users-list' });
    const panel = h('div', { id: 'user-panel', 'aria-live': 'polite' });
    const filter = h('input', { type: 'search', id: 'user-filter', placeholder: 'Filter by id', 'aria-label': 'Filter users by id' });
    root.append(h('h1', {}, 'Users'),
      h('p', { class: 'muted' }, 'End users Hermes holds something of: sessions, notes, jobs, keys. The owner is not listed.'),
      filter, error, panel, list);
    let users = [];

    function forget(id, opener) {
      const cancel = () => {
        clear(panel);
        const again = opener && opener.isConnected ? opener : list.querySelector(`button.forget[data-user="${CSS.escape(id)}"]`);
        if (again) again.focus(); // back where the keyboard was
      };
      clear(panel).append(typedConfirm({
        id: 'forget-confirm',
        word: id,
        prompt: `Forget user “${id}” everywhere (notes and their history, sessions, search, jobs, keys, pairing). Type the user id to confirm:`,
        action: 'Forget',
        onCancel: cancel,
        onConfirm: async () => {
          try {
            const counts = await ctx.api('DELETE', `/api/users/${encodeURIComponent(id)}`);
            const parts = Object.entries(counts).filter(([k, v]) => k !== 'forgotten' && v).map(([k, v]) => `${v} ${k.replace(/_/g, ' ')}`);
            clear(panel).append(h('p', { class: 'card', id: 'forgotten' }, `Forgot ${counts.forgotten}: ${parts.join(', ') || 'nothing was left'}.`));
            await load();
          } catch (err) { error.textContent = err.message; }
        },
      }), h('button', { type: 'button', id: 'forget-cancel', onclick: cancel }, 'Cancel (Esc)'));
    }

    function draw() {
      const q = filter.value.trim().toLowerCase();
      const shown = users.filter((u) => !q || u.id.toLowerCase().includes(q));
      clear(list);
      paged(list, shown, (rows) => table([
        ['User', (u) => h('strong', {}, u.id)],
        ['Sessions', (u) => String(u.sessions ?? 0)],
        ['Messages', (u) => String(u.messages ?? 0)],
        ['Last active', (u) => stamp(u.last_active) || 'never'],
        ['', (u) => h('div', { class: 'row' }, exportLink(u.id),
          h('button', { type: 'button', class: 'danger forget', 'data-user': u.id, onclick: (e) => forget(u.id, e.currentTarget) }, 'Forget…'))],
      ], rows, (u) => ({ 'data-user': u.id })));
    }

    async function load() {
      try {
        users = (await ctx.api('GET', '/api/users')).users || [];
        users.sort((a, b) => (b.last_active || 0) - (a.last_active || 0));
        draw();
      } catch (err) { clear(list).append(errorBox(err)); }
    }
    filter.addEventListener('input', draw);
    await load();
  },
};
