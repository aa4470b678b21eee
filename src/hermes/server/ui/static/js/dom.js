// DOM helpers. Data is only ever set as text (textContent / attributes), never parsed as
// HTML: a note or a title like `<img src=x onerror=...>` shows as those characters.

/** h('div', {class: 'x', onclick: fn, 'aria-label': 'y'}, 'text', child, [more]) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.className = value;
    } else if (name === 'value') {
      el.value = value;
    } else if (name === 'href' && !/^(#|\/|https?:)/.test(String(value))) {
      continue; // no javascript: or data: links from data
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function when(ts) {
  if (!ts) return '';
  const d = new Date(ts * 1000);
  return d.toLocaleString();
}

export function ago(ts) {
  if (!ts) return '';
  const s = Math.max(0, Date.now() / 1000 - ts);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function errorBox(err) {
  return h('p', { class: 'error', role: 'alert' }, err && err.message ? err.message : String(err));
}

/** A "Load more" pager: fetchPage(offset) resolves to a list; render(item) to a node. */
export function pager(list, fetchPage, render, size = 50) {
  let offset = 0;
  const more = h('button', { class: 'more', type: 'button' }, 'Load more');
  const status = h('p', { class: 'muted' });
  async function load() {
    more.disabled = true;
    try {
      const items = await fetchPage(offset, size);
      offset += items.length;
      for (const item of items) list.append(render(item));
      more.hidden = items.length < size;
      status.textContent = offset === 0 ? 'Nothing here yet.' : '';
    } catch (err) {
      status.textContent = err.message;
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', load);
  return { controls: h('div', { class: 'pager' }, status, more), load };
}
