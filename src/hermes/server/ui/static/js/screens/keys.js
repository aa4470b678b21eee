// Keys & quotas (admin): scoped keys — each acts as one end user — listed, created (the
// secret shown once, here only) and revoked; the quota settings they are held to, read-only.
import { h, clear, errorBox } from '../dom.js';
import { useStyles, table, paged, stamp, badge, note } from '../admin/kit.js';

function quotaFacts(q) {
  const v = (x) => (x === null || x === undefined ? 'no limit' : String(x));
  return h('section', { class: 'card', id: 'quotas' }, h('h2', {}, 'Quotas'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Requests a minute'), h('dd', {}, v(q.requests_per_minute)),
      h('dt', {}, 'Turns a day'), h('dd', {}, v(q.turns_per_day)),
      h('dt', {}, 'Owner held to them'), h('dd', {}, q.apply_to_owner ? 'yes' : 'no')),
    h('p', { class: 'muted' }, 'Per scoped key and per user. Change them under quotas: in config.yaml.'));
}

export default {
  id: 'keys',
  title: 'Keys',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const error = note();
    const fresh = h('div', { id: 'new-key', 'aria-live': 'polite' });
    const list = h('div', { id: 'keys-list' });
    const quotas = h('div', {});
    const user = h('input', { id: 'key-user', required: true, maxlength: '256', autocomplete: 'off', placeholder: 'alice' });
    const label = h('input', { id: 'key-label', maxlength: '200', autocomplete: 'off', placeholder: 'optional' });
    const expires = h('select', { id: 'key-expires' },
      ['', '1d', '30d', '90d', '1y'].map((v) => h('option', { value: v }, v ? `in ${v}` : 'never')));
    const form = h('form', { class: 'card', id: 'key-form' }, h('h2', {}, 'New key'),
      h('div', { class: 'grid2' },
        h('label', {}, 'User id', user), h('label', {}, 'Label', label), h('label', {}, 'Expires', expires)),
      h('p', {}, h('button', { type: 'submit', class: 'primary', id: 'key-create' }, 'Create key')));
    root.append(h('h1', {}, 'Keys & quotas'), error, fresh, form, list, quotas);

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      error.textContent = '';
      const body = { user: user.value.trim() };
      if (label.value.trim()) body.label = label.value.trim();
      if (expires.value) body.expires = expires.value;
      try {
        const made = await ctx.api('POST', '/api/keys', body);
        const secret = h('p', { class: 'secret', id: 'key-secret', tabindex: '0' }, made.secret);
        clear(fresh).append(h('div', { class: 'card' },
          h('h2', {}, `Key for ${made.key.user}`),
          h('p', {}, 'Copy it now: it is shown this once and Hermes keeps only its hash.'),
          secret,
          h('div', { class: 'row' },
            h('button', { type: 'button', onclick: () => navigator.clipboard && navigator.clipboard.writeText(made.secret).catch(() => {}) }, 'Copy'),
            h('button', { type: 'button', id: 'key-done', onclick: () => clear(fresh) }, 'I have stored it'))));
        secret.focus();
        user.value = '';
        label.value = '';
        await load();
      } catch (err) { error.textContent = err.message; }
    });

    function revokeCell(k) {
      if (k.state !== 'active') return '';
      const cell = h('div', { class: 'row' });
      const ask = h('button', { type: 'button', class: 'danger revoke', onclick: () => {
        clear(cell).append(h('span', {}, `Revoke ${k.id}?`),
          h('button', { type: 'button', class: 'danger confirm-revoke', onclick: async () => {
            try { await ctx.api('DELETE', `/api/keys/${encodeURIComponent(k.id)}`); await load(); } catch (err) { error.textContent = err.message; }
          } }, 'Yes, revoke'),
          h('button', { type: 'button', onclick: () => clear(cell).append(ask) }, 'No'));
        cell.querySelector('.confirm-revoke').focus();
      } }, 'Revoke…');
      cell.append(ask);
      return cell;
    }

    async function load() {
      let body;
      try { body = await ctx.api('GET', '/api/keys'); } catch (err) { clear(list).append(errorBox(err)); return; }
      const keys = (body.keys || []).slice().reverse();
      clear(list).append(h('h2', {}, 'Scoped keys'));
      paged(list, keys, (rows) => table([
        ['Id', (k) => h('code', {}, k.id)],
        ['User', (k) => k.user],
        ['Label', (k) => k.label || ''],
        ['State', (k) => badge(k.state)],
        ['Created', (k) => stamp(k.created_at)],
        ['Expires', (k) => stamp(k.expires_at) || 'never'],
        ['', revokeCell],
      ], rows, (k) => ({ 'data-key': k.id })));
      clear(quotas).append(quotaFacts(body.quotas || {}));
    }
    await load();
  },
};
