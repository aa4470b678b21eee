// Cron: the scope's scheduled prompts with their next runs; run now, pause and resume; each
// run's output and delivery outcome (#/cron/<job id>). The owner may pick a user's scope.
import { h, clear, errorBox } from '../dom.js';
import { scopeHeaders, userPicker } from '../userpick.js';
import { useStyles, table, paged, stamp, badge, note } from '../admin/kit.js';

const POLL_MS = 1000;
const POLL_LIMIT = 180;

function jobPath(id, rest = '') {
  return `/api/jobs/${encodeURIComponent(id)}${rest}`;
}

function delivery(run) {
  const d = run.delivery;
  if (!d) return h('span', { class: 'muted' }, 'not delivered (local: saved only)');
  const parts = [badge(d.status)];
  for (const t of d.delivered || []) parts.push(' ', h('span', {}, `→ ${t}`));
  for (const t of d.failed || []) parts.push(' ', h('span', { class: 'status-failed' }, `✗ ${t}`));
  if (d.not_sent) parts.push(' ', h('span', { class: 'muted' }, d.not_sent));
  return h('span', { class: 'delivery' }, parts);
}

function runNode(run) {
  return h('details', { class: 'card run', 'data-file': run.file },
    h('summary', {}, badge(run.status), ' ', stamp(run.created_at), ' · ', delivery(run)),
    h('pre', { class: 'output' }, run.content || ''));
}

async function listView(root, ctx) {
  const opts = () => ({ headers: scopeHeaders(ctx) });
  const error = note();
  const list = h('div', { id: 'jobs-list' });
  root.append(h('h1', {}, 'Cron'), userPicker(ctx, () => load()), error, list);

  async function act(job, what) {
    error.textContent = '';
    try {
      if (what === 'run') { ctx.navigate(`#/cron/${encodeURIComponent(job.id)}/run`); return; }
      await ctx.api('POST', jobPath(job.id, `/${what}`), {}, opts());
      await load();
    } catch (err) { error.textContent = err.message; }
  }

  async function load() {
    let jobs;
    try {
      jobs = (await ctx.api('GET', '/api/jobs', undefined, opts())).jobs || [];
    } catch (err) { clear(list).append(errorBox(err)); return; }
    jobs.sort((a, b) => String(a.next_run_at || '~').localeCompare(String(b.next_run_at || '~')));
    clear(list);
    paged(list, jobs, (rows) => table([
      ['Job', (j) => h('a', { href: `#/cron/${encodeURIComponent(j.id)}` }, j.name || j.id)],
      ['Schedule', (j) => j.schedule_display || ''],
      ['State', (j) => badge(j.state)],
      ['Next run', (j) => stamp(j.next_run_at) || '—'],
      ['Last run', (j) => [stamp(j.last_run_at) || 'never', j.last_status ? [' ', badge(j.last_status)] : null]],
      ['Deliver', (j) => j.deliver || 'local'],
      ['', (j) => h('div', { class: 'row' },
        h('button', { type: 'button', class: 'run-now', onclick: () => act(j, 'run') }, 'Run now'),
        j.state === 'paused'
          ? h('button', { type: 'button', class: 'resume', onclick: () => act(j, 'resume') }, 'Resume')
          : h('button', { type: 'button', class: 'pause', onclick: () => act(j, 'pause') }, 'Pause'))],
    ], rows, (j) => ({ 'data-job': j.id })));
    if (!jobs.length) list.append(h('p', { class: 'muted' }, 'No scheduled prompts in this scope. Create them with the cronjob tool, `hermes cron`, or POST /api/jobs.'));
  }
  await load();
}

async function detailView(root, ctx, id, runFirst) {
  const opts = () => ({ headers: scopeHeaders(ctx) });
  const error = note();
  const facts = h('div', {});
  const status = h('p', { class: 'muted', id: 'run-status', 'aria-live': 'polite' });
  const runs = h('div', { id: 'runs' });
  root.append(h('p', {}, h('a', { href: '#/cron' }, '← All jobs')), facts, error, status, runs);
  let stopped = false;
  let count = -1;

  async function loadJob() {
    const { job } = await ctx.api('GET', jobPath(id), undefined, opts());
    clear(facts).append(h('h1', {}, job.name || job.id),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Schedule'), h('dd', {}, job.schedule_display || ''),
        h('dt', {}, 'State'), h('dd', {}, badge(job.state)),
        h('dt', {}, 'Next run'), h('dd', {}, stamp(job.next_run_at) || '—'),
        h('dt', {}, 'Deliver'), h('dd', {}, job.deliver || 'local'),
        h('dt', {}, 'Last error'), h('dd', {}, job.last_error || job.last_delivery_error || '—'),
        h('dt', {}, 'Prompt'), h('dd', {}, h('pre', { class: 'output' }, job.prompt || ''))),
      h('div', { class: 'row' },
        h('button', { type: 'button', id: 'run-now', onclick: runNow }, 'Run now'),
        h('button', { type: 'button', id: 'toggle', onclick: () => toggle(job) }, job.state === 'paused' ? 'Resume' : 'Pause')));
  }

  async function loadRuns() {
    const found = (await ctx.api('GET', jobPath(id, '/runs'), undefined, opts())).runs || [];
    clear(runs);
    paged(runs, found, (rows) => rows.map(runNode), 10);
    const first = runs.querySelector('details.run');
    if (first) first.open = true;
    count = found.length;
    return found;
  }

  // The run's output is saved before it is delivered, and its delivery record is added to it
  // after: polling goes on until the new run has that record, or it would read "not
  // delivered" for good.
  async function poll(before) {
    status.textContent = 'Running… the output appears here when the run ends.';
    for (let i = 0; i < POLL_LIMIT && !stopped; i += 1) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (stopped) return;
      const found = await loadRuns();
      if (found.length > before && found[0].delivery) {
        status.textContent = 'The run finished.';
        await loadJob();
        return;
      }
      if (found.length > before) status.textContent = 'The run finished; delivering…';
    }
    if (!stopped) status.textContent = 'Still running; reload later to see its output.';
  }

  async function runNow() {
    error.textContent = '';
    try {
      const before = count;
      await ctx.api('POST', jobPath(id, '/run'), {}, opts());
      await poll(before);
    } catch (err) { error.textContent = err.message; }
  }

  async function toggle(job) {
    try {
      await ctx.api('POST', jobPath(id, job.state === 'paused' ? '/resume' : '/pause'), {}, opts());
      await loadJob();
    } catch (err) { error.textContent = err.message; }
  }

  try {
    await loadJob();
    await loadRuns();
  } catch (err) { root.append(errorBox(err)); return undefined; }
  if (runFirst) {
    history.replaceState(null, '', `#/cron/${encodeURIComponent(id)}`); // a reload must not run it again
    runNow();
  }
  return () => { stopped = true; };
}

export default {
  id: 'cron',
  title: 'Cron',
  adminOnly: true,
  async render(root, ctx) {
    useStyles();
    const [id, state] = ctx.params;
    if (id) return detailView(root, ctx, id, state === 'run');
    return listView(root, ctx);
  },
};
