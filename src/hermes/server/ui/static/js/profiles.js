// The profile switcher (SPEC §16): one server serves several profiles, the default one at
// /ui/ and profile NAME at /p/NAME/ui/, each signed in with its own key and its own cookie.
// At sign-in the key is shown to GET /api/profiles, which lists the profiles it opens, and
// signed in to each of them; the header then offers those profiles, one click apart. The key
// itself is never stored: only the names the server listed are kept for this tab.
import { h } from './dom.js';
import { base } from './api.js';

const KEY = 'hermes.ui.profiles';

export function currentProfile() {
  return base ? base.slice('/p/'.length) : 'default';
}

async function signInTo(profile, key) {
  const res = await fetch(`${profile.base}/ui/login`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ key }),
  });
  return res.ok;
}

/** After a sign-in with `key`: sign in to every other profile it opens, remember their names. */
export async function rememberProfiles(key) {
  try {
    const res = await fetch('/api/profiles', { headers: { Authorization: `Bearer ${key}`, Accept: 'application/json' } });
    if (!res.ok) { sessionStorage.removeItem(KEY); return; } // a server without profiles
    const { profiles } = await res.json();
    const here = currentProfile();
    const opened = [];
    for (const profile of profiles || []) {
      if (profile.name === here || await signInTo(profile, key)) opened.push(profile);
    }
    sessionStorage.setItem(KEY, JSON.stringify(opened));
  } catch (_) { /* no switcher: this profile works as before */ }
}

function remembered() {
  try {
    const list = JSON.parse(sessionStorage.getItem(KEY) || '[]');
    return Array.isArray(list) ? list.filter((p) => p && typeof p.name === 'string' && typeof p.base === 'string') : [];
  } catch (_) {
    return [];
  }
}

/** The header's profile control: a picker when several profiles are open, else the name. */
export function profileSwitcher() {
  const here = currentProfile();
  const list = remembered();
  if (!list.some((p) => p.name === here)) list.unshift({ name: here, base });
  if (list.length < 2) {
    return h('span', { class: 'muted', id: 'profile-name' }, here === 'default' ? '' : `profile ${here}`);
  }
  const select = h('select', { id: 'profile-pick', 'aria-label': 'Profile' },
    list.map((p) => h('option', { value: p.base, selected: p.name === here }, p.name)));
  select.addEventListener('change', () => {
    if (/^(\/p\/[a-z0-9][a-z0-9_-]{0,63})?$/.test(select.value)) location.href = `${select.value}/ui/`;
  });
  return h('label', { class: 'row' }, 'Profile: ', select);
}
