// Status: the health of every part (/health/detailed), version, uptime, degraded reasons.
import { h, errorBox } from '../dom.js';

function uptime(seconds) {
  if (seconds === undefined || seconds === null) return '';
  const d = Math.floor(seconds / 86400);
  const hh = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return d ? `${d} d ${hh} h` : hh ? `${hh} h ${m} min` : `${m} min ${Math.floor(seconds % 60)} s`;
}

// A part made of members (the gateway's adapters, the MCP servers): one line each.
function members(part) {
  const entries = Object.entries(part.adapters || part.servers || {});
  if (!entries.length) return null;
  return h('ul', { class: 'members' }, entries.map(([name, m]) => {
    const state = m.state || m.status || (m.connected ? 'connected' : 'unknown');
    const extra = [m.last_error || m.error, m.tools ? `${m.tools.length} tools` : ''].filter(Boolean).join(' · ');
    return h('li', { 'data-member': name }, h('strong', {}, name), ` ${state}`, extra ? ` — ${extra}` : '');
  }));
}

export default {
  id: 'status',
  title: 'Status',
  adminOnly: true, // parts, paths and reasons are the operator's business
  async render(root, ctx) {
    root.append(h('h1', {}, 'Status'));
    let health;
    try {
      health = await ctx.api('GET', '/health/detailed').catch((err) => {
        if (err.status === 503) return err.body || { status: 'down', parts: {}, reasons: { store: err.message } };
        throw err;
      });
    } catch (err) {
      root.append(errorBox(err));
      return;
    }
    root.append(h('p', { class: `badge status-${health.status}`, id: 'overall' }, `Hermes ${health.status}`));
    root.append(h('dl', { class: 'facts' },
      h('dt', {}, 'Version'), h('dd', {}, health.version || ctx.version || ''),
      h('dt', {}, 'Uptime'), h('dd', { id: 'uptime' }, uptime(health.uptime)),
      h('dt', {}, 'Signed in as'), h('dd', {}, ctx.isAdmin ? 'owner' : `user ${ctx.user}`),
    ));
    const parts = Object.entries(health.parts || health.components || {});
    if (health.store) { // the store's own report: schema, integrity, search index
      const st = health.store;
      const detail = [st.error, st.integrity && st.integrity !== 'ok' ? `integrity: ${st.integrity}` : '',
        st.search_index && st.search_index !== 'ok' ? `search index: ${st.search_index}` : '',
        st.schema_version ? `schema ${st.schema_version}` : '', st.journal_mode ? `journal ${st.journal_mode}` : '']
        .filter(Boolean).join(' · ');
      parts.unshift(['store', { status: st.ok ? 'ok' : 'error', detail }]);
    }
    const rows = parts.map(([name, part]) => {
      const state = part.status || (part.ok ? 'ok' : 'unknown');
      const why = [part.reason, part.error, part.detail].filter(Boolean).join(' — ');
      return h('tr', { class: `part status-${state}`, 'data-part': name },
        h('th', { scope: 'row' }, name),
        h('td', {}, h('span', { class: `badge status-${state}` }, state)),
        h('td', {}, why, members(part), part.fix ? h('div', { class: 'fix' }, 'Fix: ', part.fix) : null),
      );
    });
    const reasons = Object.entries(health.reasons || {});
    if (reasons.length) {
      root.append(h('section', { class: 'card', id: 'reasons' }, h('h2', {}, 'Why degraded'),
        h('ul', {}, reasons.map(([name, why]) => h('li', {}, h('strong', {}, name), ': ', why)))));
    }
    root.append(h('table', { class: 'parts' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Part'), h('th', {}, 'State'), h('th', {}, 'Details'))),
      h('tbody', {}, rows),
    ));
  },
};
