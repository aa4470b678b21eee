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
  async render(root, ctx) {
    root.append(h('h1', {}, 'Status'));
    let health;
    try {
      health = await ctx.api('GET', '/health/detailed');
    } catch (err) {
      root.append(errorBox(err));
      return;
    }
    root.append(h('p', { class: `badge status-${health.status}`, id: 'overall' }, `Hermes ${health.status}`));
    root.append(h('dl', { class: 'facts' },
      h('dt', {}, 'Version'), h('dd', {}, health.version || ctx.version || ''),
      h('dt', {}, 'Uptime'), h('dd', {}, uptime(health.uptime_seconds ?? health.uptime)),
      h('dt', {}, 'Signed in as'), h('dd', {}, ctx.isAdmin ? 'owner' : `user ${ctx.user}`),
    ));
    const rows = Object.entries(health.parts || health.components || {}).map(([name, part]) => {
      const state = part.status || (part.ok ? 'ok' : 'unknown');
      const why = [part.reason, part.error, part.detail].filter(Boolean).join(' — ');
      return h('tr', { class: `part status-${state}` },
        h('th', { scope: 'row' }, name),
        h('td', {}, h('span', { class: `badge status-${state}` }, state)),
        h('td', {}, why, part.fix ? h('div', { class: 'fix' }, 'Fix: ', part.fix) : null),
      );
    });
    root.append(h('table', { class: 'parts' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Part'), h('th', {}, 'State'), h('th', {}, 'Details'))),
      h('tbody', {}, rows),
    ));
  },
};
