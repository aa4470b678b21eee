// The dashboard shell: sign-in, the navigation built from screens/index.js, hash routing
// (#/<screen>/<params…>) and the ctx every screen's render(root, ctx) receives.
import { h, clear, errorBox } from './dom.js';
import { api, base, stream, setCsrf, setSignedOutHandler } from './api.js';
import { profileSwitcher, rememberProfiles } from './profiles.js';
import { screens } from './screens/index.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
let session = null;
let cleanup = null;

function visible() {
  return screens.filter((s) => !(s.adminOnly && session.scope !== 'owner'));
}

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return { id: parts[0] || '', params: parts.slice(1).filter((p) => p !== '') };
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function ctx(params) {
  return {
    api, stream, navigate, params,
    scope: session.scope === 'owner' ? 'owner' : session.user,
    user: session.user,
    isAdmin: session.scope === 'owner',
    open: session.open,
    version: session.version,
  };
}

async function route() {
  if (!session) return;
  if (typeof cleanup === 'function') { try { cleanup(); } catch (_) { /* ignore */ } }
  cleanup = null;
  const { id, params } = parseHash();
  const list = visible();
  const screen = list.find((s) => s.id === id) || list[0];
  for (const link of nav.querySelectorAll('a')) {
    link.setAttribute('aria-current', link.dataset.id === screen.id ? 'page' : 'false');
  }
  const refused = screens.find((s) => s.id === id && !list.includes(s));
  clear(main);
  if (refused) {
    main.append(h('p', { class: 'error', role: 'alert' }, `“${refused.title}” needs the server key.`));
    return;
  }
  document.title = `${screen.title} · Hermes`;
  const root = h('section', { class: `screen screen-${screen.id}`, 'data-screen': screen.id });
  main.append(root);
  try {
    cleanup = await screen.render(root, ctx(params));
  } catch (err) {
    root.append(errorBox(err));
  }
  performance.mark(`screen:${screen.id}`); // bench/ui.py reads when each screen was drawn
}

function shell() {
  clear(nav);
  for (const s of visible()) {
    nav.append(h('a', { href: `#/${s.id}`, 'data-id': s.id }, s.title));
  }
  clear(who);
  who.append(
    profileSwitcher(),
    ' ',
    h('span', { class: 'muted' }, session.scope === 'owner' ? (session.open ? 'owner (open server)' : 'owner') : `user ${session.user}`),
    ' ',
    h('button', { type: 'button', id: 'signout', onclick: signOut }, 'Sign out'),
  );
}

async function signOut() {
  try { await api('POST', '/ui/logout'); } catch (_) { /* signed out anyway */ }
  session = null;
  setCsrf('');
  showSignIn();
}

function showSignIn(message) {
  session = null;
  clear(nav);
  clear(who);
  clear(main);
  const key = h('input', { type: 'password', name: 'key', id: 'key', autocomplete: 'current-password', required: true, 'aria-describedby': 'key-help' });
  const note = h('p', { class: 'error', role: 'alert', id: 'signin-error' }, message || '');
  const form = h('form', { class: 'card signin', method: 'post', action: `${base}/ui/login` },
    h('h1', {}, 'Sign in'),
    h('label', { for: 'key' }, 'Key'),
    key,
    h('p', { class: 'muted', id: 'key-help' }, 'The server key (server.api_key) sees everything; a scoped key (hermes keys create) sees only its own user.'),
    h('button', { type: 'submit', id: 'signin' }, 'Sign in'),
    note,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    note.textContent = '';
    try {
      const res = await fetch(`${base}/ui/login`, {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ key: key.value }),
      });
      const body = await res.json();
      if (!res.ok) throw new Error(body.error ? body.error.message : res.statusText);
      await rememberProfiles(key.value); // the other profiles this key opens (switcher)
      key.value = '';
      start(body);
    } catch (err) {
      note.textContent = err.message;
      key.focus();
    }
  });
  main.append(form);
  key.focus();
}

function start(body) {
  session = body;
  setCsrf(body.csrf);
  shell();
  route();
}

setSignedOutHandler(() => { if (session) showSignIn('Your sign-in ended; sign in again.'); });
window.addEventListener('hashchange', route);

(async () => {
  try {
    const res = await fetch(`${base}/ui/session`, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (res.ok) start(await res.json());
    else showSignIn();
  } catch (err) {
    clear(main).append(errorBox(err));
  }
})();
