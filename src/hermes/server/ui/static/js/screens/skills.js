// Skills (admin): the skill library — list and filter, read one, edit its SKILL.md (the same
// parsing, name rules and safety scan as skill_manage), create a new one, delete one.
import { h, clear, errorBox } from '../dom.js';
import { useStyles, table, paged, note } from '../admin/kit.js';

const TEMPLATE = '---\nname: NAME\ndescription: What it is for, in one line\n---\n## When to Use\n\n## Procedure\n1. \n';

function skillPath(name) { return `/api/skills/${encodeURIComponent(name)}`; }

async function listView(root, ctx) {
  const filter = h('input', { type: 'search', id: 'skill-filter', placeholder: 'Filter by name, description or category', 'aria-label': 'Filter skills' });
  const list = h('div', { id: 'skills-list' });
  const name = h('input', { id: 'new-skill-name', placeholder: 'new-skill-name', 'aria-label': 'New skill name', pattern: '[a-z0-9][a-z0-9._-]*' });
  const create = h('form', { class: 'row' }, name, h('button', { type: 'submit', id: 'new-skill' }, 'New skill'));
  create.addEventListener('submit', (e) => { e.preventDefault(); if (name.value.trim()) ctx.navigate(`#/skills/${encodeURIComponent(name.value.trim())}/new`); });
  root.append(h('h1', {}, 'Skills'), create, filter, list);
  let skills;
  try { skills = (await ctx.api('GET', '/api/skills')).skills || []; } catch (err) { root.append(errorBox(err)); return; }
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = skills.filter((s) => !q || `${s.name} ${s.description} ${s.category || ''}`.toLowerCase().includes(q));
    clear(list);
    paged(list, shown, (rows) => table([
      ['Skill', (s) => h('a', { href: `#/skills/${encodeURIComponent(s.name)}` }, s.name)],
      ['Category', (s) => s.category || ''],
      ['Description', (s) => s.description || ''],
    ], rows, (s) => ({ 'data-skill': s.name })), 50);
  };
  filter.addEventListener('input', draw);
  draw();
}

async function detailView(root, ctx, name, isNew) {
  const error = note();
  const saved = h('p', { class: 'muted', id: 'skill-saved', 'aria-live': 'polite' });
  const area = h('textarea', { class: 'skill', id: 'skill-text', 'aria-label': 'SKILL.md', spellcheck: 'false' });
  const files = h('p', { class: 'muted' });
  const category = h('input', { id: 'skill-category', placeholder: 'category (optional)', 'aria-label': 'Category', maxlength: '64' });
  root.append(h('p', {}, h('a', { href: '#/skills' }, '← All skills')), h('h1', {}, name), error, files);
  if (isNew) {
    area.value = TEMPLATE.replace('NAME', name);
    root.append(h('div', { class: 'row' }, category));
  } else {
    try {
      const { skill } = await ctx.api('GET', skillPath(name));
      area.value = skill.content || '';
      files.textContent = `${skill.category ? `Category ${skill.category}. ` : ''}${skill.files && skill.files.length ? `Files: ${skill.files.join(', ')}` : ''}`;
    } catch (err) { root.append(errorBox(err)); return; }
  }
  const save = h('button', { type: 'button', class: 'primary', id: 'skill-save' }, isNew ? 'Create' : 'Save');
  save.addEventListener('click', async () => {
    error.textContent = '';
    saved.textContent = '';
    try {
      const q = isNew && category.value.trim() ? `?category=${encodeURIComponent(category.value.trim())}` : '';
      const res = await ctx.api('PUT', skillPath(name) + q, { content: area.value });
      saved.textContent = res.created ? 'Created.' : 'Saved.';
      if (isNew) history.replaceState(null, '', `#/skills/${encodeURIComponent(res.skill.name)}`);
    } catch (err) { error.textContent = err.message; }
  });
  const actions = h('div', { class: 'row' }, save, saved);
  if (!isNew) {
    const cell = h('span', {});
    const del = h('button', { type: 'button', class: 'danger', id: 'skill-delete', onclick: () => {
      clear(cell).append(`Delete ${name} and its files? `,
        h('button', { type: 'button', class: 'danger', id: 'skill-delete-yes', onclick: async () => {
          try { await ctx.api('DELETE', skillPath(name)); ctx.navigate('#/skills'); } catch (err) { error.textContent = err.message; }
        } }, 'Yes, delete'),
        h('button', { type: 'button', onclick: () => clear(cell).append(del) }, 'No'));
    } }, 'Delete…');
    cell.append(del);
    actions.append(cell);
  }
  root.append(area, actions);
}

export default {
  id: 'skills',
  title: 'Skills',
  adminOnly: true, // one skill's text and every change are the owner's (the API's rule)
  async render(root, ctx) {
    useStyles();
    const [name, mode] = ctx.params;
    if (name) return detailView(root, ctx, name, mode === 'new');
    return listView(root, ctx);
  },
};
