// Chat: a session rail with search, streamed answers (run events), tool calls as live cards,
// approvals answered inline, and interrupt.
import { h, clear, ago, errorBox } from '../dom.js';
import { scopeHeaders, userPicker } from '../userpick.js';

const RAIL_PAGE = 30;

function newId() {
  const d = new Date();
  const pad = (n) => String(n).padStart(2, '0');
  return `ui-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;
}

function bubble(role, text, extra = '') {
  return h('div', { class: `msg ${role} ${extra}`.trim(), 'data-role': role }, text || '');
}

function toolCard(name, preview, started) {
  const result = h('pre', { class: 'result muted' }, 'Open after the call ends to see its result.');
  const state = h('span', { class: 'badge' }, 'running');
  const card = h('details', { class: 'toolcard', 'data-tool': name },
    h('summary', {}, h('strong', {}, name), ' ', h('code', {}, preview || ''), ' ', state,
      ' ', h('span', { class: 'muted time' }, new Date(started).toLocaleTimeString())),
    result);
  return { card, state, result };
}

export default {
  id: 'chat',
  title: 'Chat',
  async render(root, ctx) {
    const headers = () => scopeHeaders(ctx);
    let sessionId = ctx.params[0] || '';
    let controller = null;
    let runId = null;

    const search = h('input', { type: 'search', id: 'rail-search', placeholder: 'Search sessions', 'aria-label': 'Search sessions' });
    const railList = h('nav', { class: 'rail-list', 'aria-label': 'Sessions' });
    const rail = h('aside', { class: 'rail card' },
      h('button', { type: 'button', id: 'new-chat', class: 'primary', onclick: () => ctx.navigate(`#/chat/${encodeURIComponent(newId())}`) }, 'New chat'),
      search, railList);
    const log = h('div', { class: 'log', id: 'chat-log', 'aria-live': 'polite' });
    const input = h('textarea', { id: 'chat-input', 'aria-label': 'Message', placeholder: 'Message Hermes (Enter sends, Shift+Enter for a new line)' });
    const send = h('button', { type: 'submit', id: 'chat-send', class: 'primary' }, 'Send');
    const stop = h('button', { type: 'button', id: 'chat-stop', class: 'danger', hidden: true }, 'Stop');
    const note = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { class: 'composer' }, input, send, stop);
    const title = h('h1', {}, sessionId ? `Chat · ${sessionId}` : 'Chat');
    const picker = userPicker(ctx, () => ctx.navigate('#/chat'));
    root.append(title, picker, h('div', { class: 'chat' }, rail,
      h('div', { class: 'conversation' }, log, form, note)));

    async function loadRail() {
      clear(railList);
      const q = search.value.trim();
      try {
        const url = `/api/sessions?limit=${RAIL_PAGE}${q ? `&q=${encodeURIComponent(q)}` : ''}`;
        const { sessions } = await ctx.api('GET', url, undefined, { headers: headers() });
        for (const s of sessions) {
          railList.append(h('a', {
            href: `#/chat/${encodeURIComponent(s.id)}`,
            'aria-current': s.id === sessionId ? 'true' : 'false',
            title: s.id,
          }, s.title || s.id, h('div', { class: 'muted' }, ago(s.updated_at))));
        }
        if (!sessions.length) railList.append(h('p', { class: 'muted' }, q ? 'No match.' : 'No sessions yet.'));
      } catch (err) {
        railList.append(errorBox(err));
      }
    }
    let searchTimer = null;
    search.addEventListener('input', () => { clearTimeout(searchTimer); searchTimer = setTimeout(loadRail, 250); });

    async function loadTranscript() {
      clear(log);
      if (!sessionId) {
        log.append(h('p', { class: 'muted' }, 'Start a new chat, or pick a session.'));
        return;
      }
      try {
        const info = await ctx.api('GET', `/api/sessions/${encodeURIComponent(sessionId)}`, undefined, { headers: headers() });
        const count = info.session.message_count;
        const offset = Math.max(0, count - 100);
        const page = await ctx.api('GET', `/api/sessions/${encodeURIComponent(sessionId)}/messages?offset=${offset}&limit=100`, undefined, { headers: headers() });
        for (const m of page.messages) {
          if (m.role === 'tool') log.append(bubble('tool', `${m.tool_name || 'tool'} → ${(m.content || '').slice(0, 400)}`));
          else if (m.role === 'user' || m.role === 'assistant') {
            if (m.content) log.append(bubble(m.role, m.content, m.hidden ? 'undone' : ''));
            for (const call of m.tool_calls || []) {
              const fn = call.function || call;
              log.append(bubble('tool', `${fn.name}(${(fn.arguments || '').slice(0, 200)})`));
            }
          }
        }
      } catch (err) {
        if (err.status !== 404) log.append(errorBox(err));
        else log.append(h('p', { class: 'muted' }, 'A new session: say something.'));
      }
      log.scrollTop = log.scrollHeight;
    }

    async function resultsOf(cards, before) {
      // The tool results of this turn, from the transcript (events carry no results).
      const page = await ctx.api('GET', `/api/sessions/${encodeURIComponent(sessionId)}/messages?offset=${before}&limit=200`, undefined, { headers: headers() });
      const tools = page.messages.filter((m) => m.role === 'tool');
      cards.forEach((c, i) => { if (tools[i]) c.result.textContent = tools[i].content || '(empty)'; c.result.classList.remove('muted'); });
    }

    function approvalCard(event) {
      const box = h('div', { class: 'approval', role: 'group', 'aria-label': 'Approval needed' },
        h('p', {}, h('strong', {}, `${event.tool} wants to run:`)),
        h('pre', {}, event.command || ''));
      const buttons = h('div', { class: 'row' });
      for (const choice of event.choices || ['once', 'session', 'always', 'deny']) {
        buttons.append(h('button', {
          type: 'button', class: choice === 'deny' ? 'danger' : 'primary', 'data-choice': choice,
          onclick: async () => {
            for (const b of buttons.querySelectorAll('button')) b.disabled = true;
            try {
              await ctx.api('POST', `/v1/runs/${encodeURIComponent(event.run_id)}/approval`, { choice }, { headers: headers() });
              box.append(h('p', { class: 'muted' }, `Answered: ${choice}`));
            } catch (err) { box.append(errorBox(err)); }
          },
        }, choice === 'deny' ? 'Deny' : `Allow ${choice}`));
      }
      box.append(buttons);
      return box;
    }

    async function turn(message) {
      note.textContent = '';
      if (!sessionId) {
        sessionId = newId();
        history.replaceState(null, '', `#/chat/${encodeURIComponent(sessionId)}`);
        title.textContent = `Chat · ${sessionId}`;
        clear(log);
      }
      let before = 0;
      try {
        const info = await ctx.api('GET', `/api/sessions/${encodeURIComponent(sessionId)}`, undefined, { headers: headers() });
        before = info.session.message_count;
      } catch (_) { /* a new session */ }
      log.append(bubble('user', message));
      let answer = null;
      const cards = [];
      const running = {};
      controller = new AbortController();
      send.disabled = true;
      stop.hidden = false;
      const onEvent = (event) => {
        runId = event.run_id || runId;
        if (event.event === 'message.delta') {
          if (!answer) { answer = bubble('assistant', ''); log.append(answer); }
          answer.textContent += event.delta;
        } else if (event.event === 'tool.started') {
          const card = toolCard(event.tool, event.preview, Date.now());
          card.started = Date.now();
          cards.push(card);
          (running[event.tool] = running[event.tool] || []).push(card);
          log.append(card.card);
          answer = null;
        } else if (event.event === 'tool.completed') {
          const card = (running[event.tool] || []).shift();
          if (card) {
            card.state.textContent = `${event.error ? 'failed' : 'done'} in ${Number(event.duration || 0).toFixed(2)} s`;
            card.state.className = `badge status-${event.error ? 'failed' : 'completed'}`;
          }
        } else if (event.event === 'approval.request') {
          log.append(approvalCard(event));
        } else if (event.event === 'run.failed') {
          log.append(errorBox(new Error(typeof event.error === 'string' ? event.error : (event.error && event.error.message) || 'The run failed.')));
        } else if (event.event === 'run.cancelled') {
          log.append(h('p', { class: 'muted' }, 'Stopped.'));
        } else if (event.event === 'run.completed' && !answer && event.output) {
          log.append(bubble('assistant', event.output));
        }
        log.scrollTop = log.scrollHeight;
      };
      try {
        await ctx.stream(`/api/sessions/${encodeURIComponent(sessionId)}/chat/stream`, { message }, onEvent, { signal: controller.signal, headers: headers() });
      } catch (err) {
        if (err.name !== 'AbortError') note.textContent = err.message;
      } finally {
        send.disabled = false;
        stop.hidden = true;
        controller = null;
        runId = null;
      }
      for (const c of cards) {
        c.card.addEventListener('toggle', () => { if (c.card.open) resultsOf(cards, before).catch((e) => { c.result.textContent = e.message; }); }, { once: true });
      }
      loadRail();
    }

    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const text = input.value.trim();
      if (!text || send.disabled) return;
      input.value = '';
      turn(text);
    });
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
    });
    stop.addEventListener('click', async () => {
      if (!runId) return;
      try { await ctx.api('POST', `/v1/runs/${encodeURIComponent(runId)}/stop`, undefined, { headers: headers() }); } catch (err) { note.textContent = err.message; }
    });

    await Promise.all([loadRail(), loadTranscript()]);
    input.focus();
    return () => { if (controller) controller.abort(); };
  },
};
