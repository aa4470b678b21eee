// Tools & MCP (admin): each MCP server with its state, error and tools; which tools each
// kind of caller is offered (the owner, an end user, and the scheduled runs of each).
import { h, clear, errorBox } from '../dom.js';
import { useStyles, table, paged, badge, note } from '../admin/kit.js';

const CALLERS = [
  ['owner', 'Owner'], ['end_user', 'End user'], ['cron', 'Owner’s cron'], ['end_user_cron', 'End user’s cron'],
];

export default {
  id: 'tools',
  title: 'Tools & MCP',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const error = note();
    const mcp = h('div', { id: 'mcp-servers' });
    const offered = h('div', { id: 'toolsets' });
    root.append(h('h1', {}, 'Tools & MCP'), error, h('h2', {}, 'MCP servers'), mcp, h('h2', {}, 'Tools offered to each caller'), offered);
    try {
      const [{ servers }, { toolsets }] = await Promise.all([ctx.api('GET', '/api/mcp'), ctx.api('GET', '/api/toolsets')]);
      const rows = Object.entries(servers).map(([name, s]) => ({ name, ...s }));
      if (!rows.length) mcp.append(h('p', { class: 'muted' }, 'No MCP servers configured (add them under mcp_servers: in config.yaml).'));
      else mcp.append(table([
        ['Server', (s) => h('strong', {}, s.name)],
        ['Transport', (s) => s.transport || ''],
        ['State', (s) => [badge(s.status), s.retry_in_s !== undefined ? h('div', { class: 'muted' }, `retry in ${s.retry_in_s} s`) : null]],
        ['Error', (s) => s.error || ''],
        ['Tools', (s) => (s.tools.length
          ? h('details', {}, h('summary', {}, `${s.tools.length} tools`),
            h('ul', {}, s.tools.map((t) => h('li', {}, h('code', {}, t.name), t.description ? ` — ${t.description}` : ''))))
          : '—')],
      ], rows, (s) => ({ 'data-server': s.name })));
      const names = [...new Set(Object.values(toolsets).flat())].sort();
      const sets = Object.fromEntries(CALLERS.map(([id]) => [id, new Set(toolsets[id] || [])]));
      const filter = h('input', { type: 'search', id: 'tool-filter', placeholder: 'Filter tools', 'aria-label': 'Filter tools' });
      const grid = h('div', {});
      const draw = () => {
        const q = filter.value.trim().toLowerCase();
        clear(grid);
        paged(grid, names.filter((n) => !q || n.toLowerCase().includes(q)), (page) => table(
          [['Tool', (n) => h('code', {}, n)], ...CALLERS.map(([id, label]) => [label, (n) => (sets[id].has(n) ? h('span', { class: 'status-ok', 'aria-label': 'offered' }, '✓') : h('span', { class: 'muted', 'aria-label': 'not offered' }, '—'))])],
          page, (n) => ({ 'data-tool': n })), 50);
      };
      filter.addEventListener('input', draw);
      offered.append(h('p', { class: 'muted' }, CALLERS.map(([id, label]) => `${label}: ${sets[id].size}`).join(' · ')), filter, grid);
      draw();
    } catch (err) { root.append(errorBox(err)); }
  },
};
