// The dashboard's only way to the server: fetch with the sign-in cookie and, on every
// state-changing method, the X-CSRF-Token header the API requires alongside the cookie.

/** Where this dashboard's profile is served: '' for the default profile, '/p/NAME' when the
 * page is /p/NAME/ui/ (SPEC §16); every path the dashboard asks for goes under it. */
export const base = (location.pathname.match(/^\/p\/[a-z0-9][a-z0-9_-]{0,63}(?=\/ui(\/|$))/) || [''])[0];

function url(path) { return path.startsWith('/') ? base + path : path; }

let csrf = '';
let onSignedOut = () => {};

export function setCsrf(token) { csrf = token || ''; }
export function setSignedOutHandler(fn) { onSignedOut = fn; }

function headers(method, hasBody, extra) {
  const out = { Accept: 'application/json', ...(extra || {}) };
  if (hasBody) out['Content-Type'] = 'application/json';
  if (!['GET', 'HEAD'].includes(method)) out['X-CSRF-Token'] = csrf;
  return out;
}

async function failure(res) {
  let message = `${res.status} ${res.statusText}`;
  let body = null;
  try {
    body = await res.json();
    if (body && body.error && body.error.message) message = body.error.message;
    else if (body && body.detail) message = typeof body.detail === 'string' ? body.detail : JSON.stringify(body.detail);
  } catch (_) { /* not JSON */ }
  const err = new Error(message);
  err.status = res.status;
  err.body = body;
  if (res.status === 401) onSignedOut();
  return err;
}

/** api('GET', '/api/sessions?limit=50') → parsed JSON (or text); throws Error(message). */
export async function api(method, path, body, options = {}) {
  const res = await fetch(url(path), {
    method,
    credentials: 'same-origin',
    headers: headers(method, body !== undefined, options.headers),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: options.signal,
  });
  if (!res.ok) throw await failure(res);
  const type = res.headers.get('content-type') || '';
  return type.includes('json') ? res.json() : res.text();
}

/** stream(path, body, onEvent): SSE over fetch (POST when body given, else GET); each
 * `data:` line's JSON goes to onEvent(event). Resolves when the stream ends; pass
 * options.signal to stop reading (the run goes on: stop it with /v1/runs/{id}/stop). */
export async function stream(path, body, onEvent, options = {}) {
  const method = body === undefined || body === null ? 'GET' : 'POST';
  const res = await fetch(url(path), {
    method,
    credentials: 'same-origin',
    headers: { ...headers(method, method === 'POST', options.headers), Accept: 'text/event-stream' },
    body: method === 'POST' ? JSON.stringify(body) : undefined,
    signal: options.signal,
  });
  if (!res.ok) throw await failure(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (!data || data === '[DONE]') continue;
      try { onEvent(JSON.parse(data)); } catch (err) { console.error(err); }
    }
  }
}
