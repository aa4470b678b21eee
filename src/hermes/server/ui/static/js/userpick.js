// The owner sees every scope: a picker of end users (GET /api/users) whose choice becomes
// X-Hermes-User-Id on the screen's requests. A scoped key's user gets no picker.
import { h } from './dom.js';

const KEY = 'hermes.ui.user';

export function chosenUser(ctx) {
  return ctx.isAdmin ? sessionStorage.getItem(KEY) || '' : '';
}

/** Headers for the chosen scope (empty for the owner's own and for a scoped user). */
export function scopeHeaders(ctx) {
  const user = chosenUser(ctx);
  return user ? { 'X-Hermes-User-Id': user } : {};
}

/** A <label><select> of scopes; onChange() after a choice. Null for a scoped user. */
export function userPicker(ctx, onChange) {
  if (!ctx.isAdmin || ctx.open) return null;
  const select = h('select', { id: 'scope-pick', 'aria-label': 'Whose data' },
    h('option', { value: '' }, 'Owner (default scope)'));
  const current = chosenUser(ctx);
  if (current) select.append(h('option', { value: current, selected: true }, `user ${current}`));
  ctx.api('GET', '/api/users').then(({ users }) => {
    for (const u of users || []) {
      if (u.id === current) continue;
      select.append(h('option', { value: u.id }, `user ${u.id} (${u.sessions} sessions)`));
    }
  }).catch(() => {});
  select.addEventListener('change', () => {
    if (select.value) sessionStorage.setItem(KEY, select.value);
    else sessionStorage.removeItem(KEY);
    onChange();
  });
  return h('label', { class: 'row' }, 'Whose data: ', select);
}
