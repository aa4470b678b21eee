// Gateway (admin): whether the messaging gateway runs, the home chat, each platform's adapter
// and its state, and pairing requests from strangers to approve or deny.
import { h, clear, errorBox } from '../dom.js';
import { useStyles, table, paged, stamp, badge, note } from '../admin/kit.js';

function adapterState(a) {
  if (!a.configured) return 'not configured';
  if (a.connected) return 'connected';
  return a.state || 'down';
}

export default {
  id: 'gateway',
  title: 'Gateway',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const error = note();
    const facts = h('div', { id: 'gateway-facts' });
    const adapters = h('div', { id: 'adapters' });
    const pending = h('div', { id: 'pairing-pending', 'aria-live': 'polite' });
    const paired = h('div', { id: 'paired' });
    root.append(h('h1', {}, 'Gateway'), error, facts,
      h('h2', {}, 'Adapters'), adapters,
      h('h2', {}, 'Pairing requests'), pending,
      h('h2', {}, 'Paired'), paired,
      h('p', {}, h('button', { type: 'button', id: 'gateway-refresh', onclick: () => load() }, 'Refresh')));

    async function answer(code, verdict) {
      error.textContent = '';
      try {
        const res = await ctx.api('POST', `/api/gateway/pairing/${encodeURIComponent(code)}/${verdict}`, {});
        pending.prepend(h('p', { class: 'card', id: 'pairing-result' }, verdict === 'approve' ? `Approved ${res.approved}: they can message Hermes now, in their own scope.` : `Denied ${res.denied}.`));
        await loadPairing(false);
      } catch (err) { error.textContent = err.message; }
    }

    async function loadPairing(clearResult = true) {
      const body = await ctx.api('GET', '/api/gateway/pairing');
      const result = pending.querySelector('#pairing-result');
      clear(pending);
      if (result && !clearResult) pending.append(result);
      if (!body.pending.length) pending.append(h('p', { class: 'muted' }, 'Nobody is waiting. With gateway.pairing on, a stranger who messages the bot gets a one-time code that shows up here.'));
      else pending.append(table([
        ['Code', (p) => h('code', {}, p.code)],
        ['Who', (p) => [p.identity, p.name ? h('span', { class: 'muted' }, ` (${p.name})`) : null]],
        ['Asked', (p) => stamp(p.created_at)],
        ['Expires', (p) => stamp(p.expires_at)],
        ['', (p) => h('div', { class: 'row' },
          h('button', { type: 'button', class: 'primary approve', onclick: () => answer(p.code, 'approve') }, 'Approve'),
          h('button', { type: 'button', class: 'danger deny', onclick: () => answer(p.code, 'deny') }, 'Deny'))],
      ], body.pending, (p) => ({ 'data-identity': p.identity })));
      clear(paired);
      paged(paired, body.approved, (rows) => table([
        ['Identity', (a) => a.identity], ['Name', (a) => a.name || ''], ['Since', (a) => stamp(a.approved_at)],
      ], rows));
    }

    async function load() {
      error.textContent = '';
      try {
        const g = await ctx.api('GET', '/api/gateway');
        clear(facts).append(h('dl', { class: 'facts card' },
          h('dt', {}, 'Gateway'), h('dd', {}, badge(g.running ? 'running' : 'stopped'), g.pid ? ` pid ${g.pid}` : ' (it runs inside hermes serve when a platform is configured)'),
          h('dt', {}, 'Home chat'), h('dd', { id: 'home-chat' }, g.home || 'not set (send /sethome in a chat)'),
          h('dt', {}, 'Busy chats'), h('dd', {}, g.busy_mode),
          h('dt', {}, 'Pairing'), h('dd', {}, g.pairing ? 'on: strangers get a code to approve' : 'off: only allow-listed people'),
          h('dt', {}, 'Owners'), h('dd', {}, (g.owners || []).join(', ') || 'none')));
        const rows = Object.entries(g.adapters || {}).map(([name, a]) => ({ name, ...a }));
        rows.sort((a, b) => Number(b.configured) - Number(a.configured) || a.name.localeCompare(b.name));
        clear(adapters).append(table([
          ['Platform', (a) => h('strong', {}, a.name)],
          ['State', (a) => badge(adapterState(a))],
          ['In', (a) => String(a.messages_in ?? 0)],
          ['Out', (a) => String(a.messages_out ?? 0)],
          ['Restarts', (a) => String(a.restarts ?? 0)],
          ['Last error', (a) => (a.last_error ? [a.last_error, h('div', { class: 'muted' }, stamp(a.last_error_at))] : '')],
        ], rows, (a) => ({ 'data-platform': a.name })));
        await loadPairing();
      } catch (err) { clear(facts).append(errorBox(err)); }
    }
    await load();
  },
};
