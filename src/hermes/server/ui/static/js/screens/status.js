// Status: the health of every part (/health/detailed), version, uptime, degraded reasons.
import { h, errorBox } from '../dom.js';

function uptime(seconds) {
  if (seconds === undefined || seconds === null) return '';
  const d = Math.floor(seconds / 86400);
  const hh = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return d ? `${d} d ${hh} h` : hh ? `${hh} h ${m} min` : `${m} min ${Math.floor(seconds % 60)} s`;
}

export default {
  id: 'status',
  title: 'Status',
  adminOnly: true, // parts, paths and reasons are the operator's business
  async render(root, ctx) {
    root.append(h('h1', {}, 'Status'));
    let health;
    let started = null;
    try {
      const [detailed, models] = await Promise.all([
        ctx.api('GET', '/health/detailed').catch((err) => {
          if (err.status === 503) return err.body || { status: 'down', parts: {}, reasons: { store: err.message } };
          throw err;
        }),
        ctx.api('GET', '/v1/models').catch(() => null),
      ]);
      health = detailed;
      started = models && models.data && models.data[0] ? models.data[0].created : null;
    } catch (err) {
      root.append(errorBox(err));
      return;
    }
    root.append(h('p', { class: `badge status-${health.status}`, id: 'overall' }, `Hermes ${health.status}`));
    root.append(h('dl', { class: 'facts' },
      h('dt', {}, 'Version'), h('dd', {}, health.version || ctx.version || ''),
      h('dt', {}, 'Uptime'), h('dd', {}, started ? uptime(Date.now() / 1000 - started) : ''),
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
      return h('tr', { class: `part status-${state}` },
        h('th', { scope: 'row' }, name),
        h('td', {}, h('span', { class: `badge status-${state}` }, state)),
        h('td', {}, why, part.fix ? h('div', { class: 'fix' }, 'Fix: ', part.fix) : null),
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
