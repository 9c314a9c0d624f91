// The dashboard: TypeScript modules bundled by esbuild at build time (scripts/build-dashboard.ts), no framework. It offers what the API offers
// (workflows: create, edit → new version, versions, delete, execute; executions: list, page with
// live view and step timeline; Settings → API Keys) through the same endpoints, signed in by an
// HttpOnly session cookie: the key is given once on the Settings page (or a login link does it)
// and never kept by the page. Text from the API is always inserted as text nodes, never as HTML.

import { ApiError, StalePage, api, newPage, errorBox, fieldErrors, notFoundPage, fmtDate, fmtMs, fmtUsd, h, render, statusBadge } from './dom.js';
import { specFields } from './spec-fields.js';
import { cachedPath } from './cache-view.js';
import { executionPage } from './execution.js';
import { profilesPage } from './profiles.js';
import { settingsPage } from './settings.js';
import { currentTriggerLine, scheduleTag, triggerFormFields, versionTriggerCells } from './triggers.js';

const POLL_MS = 2000;
/** Stops what the current page runs in the background (polling, the live stream). */
let cleanup = () => {};

function parseJsonField(text: string, label: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${label}: not valid JSON (${(e as Error).message})`);
  }
}

const lines = (text) => text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);

// ---- pages ---------------------------------------------------------------------------------

async function signOut() {
  await fetch('/api/session', { method: 'DELETE' });
  location.hash = '#/settings';
}

async function workflowsPage() {
  const list = await api('GET', '/api/workflows?limit=200');
  render(
    h('div', { class: 'row' }, h('h1', {}, 'Workflows'), h('a', { href: '#/workflows/new', 'data-testid': 'new-workflow' }, 'New workflow')),
    list.items.length === 0
      ? h('p', { class: 'muted' }, 'No workflow yet.')
      : h('table', {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Slug'), h('th', {}, 'Version'), h('th', {}, 'Updated'), h('th', {}, 'Cost'))),
          h('tbody', {}, list.items.map((w) =>
            h('tr', { 'data-testid': 'workflow-row' },
              h('td', {}, h('a', { href: `#/workflows/${w.workflow_uuid}` }, w.name)),
              h('td', {}, w.slug),
              h('td', {}, w.current_version ? `v${w.current_version.version}` : '—'),
              h('td', {}, fmtDate(w.updated_at)),
              h('td', { 'data-testid': 'workflow-cost' }, workflowCost(w)),
            ))),
        ),
  );
}

/** The create/edit form; `current` is the workflow when editing. */
function workflowForm(current, onSubmit) {
  const spec = current?.current_version?.specification ?? {};
  const json = (v) => (v === undefined ? '' : JSON.stringify(v, null, 2));
  const field = (label: string, name: string, el: HTMLElement, hint?: string) => h('label', {}, label, hint ? h('span', {}, hint) : null, Object.assign(el, { name }));
  const f = {
    name: h('input', { value: current?.name ?? '' }),
    description: h('input', { value: current?.description ?? '' }),
    prompt: h('textarea', { required: true }, spec.prompt ?? ''),
    allowedDomains: h('input', { required: true, value: (spec.allowedDomains ?? []).join(', ') }),
    startUrl: h('input', { value: spec.startUrl ?? '' }),
    steps: h('textarea', {}, (spec.steps ?? []).join('\n')),
    payloadSchema: h('textarea', {}, json(spec.payloadSchema)),
    outputSchema: h('textarea', {}, json(spec.outputSchema)),
    maxSteps: h('input', { type: 'number', min: 1, value: spec.maxSteps ?? '' }),
    timeoutMs: h('input', { type: 'number', min: 1, value: spec.timeoutMs ?? '' }),
    model: h('input', { value: spec.model ?? '' }),
  };
  const trigger = triggerFormFields(current);
  const more = specFields(spec);
  const error = h('div');
  const form = h('form', {
    'data-testid': 'workflow-form',
    onsubmit: async (e) => {
      e.preventDefault();
      errors.clear();
      try {
        // An emptied optional field is sent as null: on an edit it is removed from the version.
        const opt = (v) => (v === undefined || v === '' ? null : v);
        const body = {
          name: f.name.value.trim() || undefined,
          description: f.description.value,
          prompt: f.prompt.value,
          allowedDomains: lines(f.allowedDomains.value),
          startUrl: opt(f.startUrl.value.trim()),
          steps: f.steps.value.trim() ? f.steps.value.split('\n').map((s) => s.trim()).filter(Boolean) : null,
          payloadSchema: opt(parseJsonField(f.payloadSchema.value, 'Payload schema')),
          outputSchema: opt(parseJsonField(f.outputSchema.value, 'Output schema')),
          maxSteps: f.maxSteps.value ? Number(f.maxSteps.value) : null,
          timeoutMs: f.timeoutMs.value ? Number(f.timeoutMs.value) : null,
          model: opt(f.model.value.trim()),
          ...more.read(),
          ...trigger.read(parseJsonField),
        };
        if (!current) for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
        await onSubmit(body);
      } catch (err) {
        errors.show(err);
      }
    },
  },
    field('Name', 'name', f.name),
    field('Description', 'description', f.description),
    field('Prompt', 'prompt', f.prompt, 'The business process, in words.'),
    field('Allowed domains', 'allowedDomains', f.allowedDomains, 'Comma-separated; *.example.com allows subdomains.'),
    field('Start URL', 'startUrl', f.startUrl),
    field('Steps', 'steps', f.steps, 'One per line.'),
    field('Payload schema', 'payloadSchema', f.payloadSchema, 'JSON Schema of the input payload.'),
    field('Output schema', 'outputSchema', f.outputSchema, 'JSON Schema of the output.'),
    h('div', { class: 'row' }, field('Max steps', 'maxSteps', f.maxSteps), field('Timeout (ms)', 'timeoutMs', f.timeoutMs), field('Model', 'model', f.model)),
    more.elements,
    trigger.elements,
    error,
    h('button', { type: 'submit', 'data-testid': 'save-workflow' }, current ? 'Save as new version' : 'Create workflow'),
  );
  // Used by the submit handler, which runs once the form is in the page.
  const errors = fieldErrors({ ...f, ...more.fields, ...trigger.fields }, error);
  return form;
}

function newWorkflowPage() {
  render(
    h('h1', {}, 'New workflow'),
    workflowForm(undefined, async (body) => {
      const w = await api('POST', '/api/workflows', body);
      location.hash = `#/workflows/${w.workflow_uuid}`;
    }),
  );
}

async function workflowPage(id) {
  const [w, versions, executions] = await Promise.all([
    api('GET', `/api/workflows/${encodeURIComponent(id)}`),
    api('GET', `/api/workflows/${encodeURIComponent(id)}/versions`),
    api('GET', `/api/executions?workflow_uuid=${encodeURIComponent(id)}&limit=20`),
  ]);
  const payload = h('textarea', { name: 'inputPayload', 'data-testid': 'input-payload' }, w.current_version?.specification?.payloadSchema ? '{}' : '');
  const execError = h('div');
  // Which version runs: by default the newest published one (a newer draft does not block it);
  // any other, a draft included, may be chosen to try it (docs/dashboard.md).
  const newestPublished = [...versions.items].filter((v) => v.status === 'published').sort((a, b) => b.version - a.version)[0];
  const versionPick = h('select', { name: 'workflowVersionId', 'data-testid': 'execute-version' },
    h('option', { value: '' }, newestPublished ? `default: the newest published (v${newestPublished.version})` : 'default (no published version)'),
    [...versions.items].sort((a, b) => b.version - a.version).map((v) => h('option', { value: v.workflow_version_uuid }, `v${v.version} (${v.status})`)),
  );
  render(
    h('h1', { 'data-testid': 'workflow-name' }, w.name),
    h('p', { class: 'muted' }, `${w.slug} · v${w.current_version?.version ?? '?'} · ${w.description || 'no description'}`),
    currentTriggerLine(w.current_version),
    h('p', { class: 'muted', 'data-testid': 'workflow-cost' }, `Cost: ${workflowCost(w)}`),
    h('h2', {}, 'Execute'),
    h('form', {
      'data-testid': 'execute-form',
      onsubmit: async (e) => {
        e.preventDefault();
        execErrors.clear();
        try {
          const input = parseJsonField(payload.value, 'Input payload');
          const body: Record<string, unknown> = input === undefined ? {} : { inputPayload: input };
          if (versionPick.value) body.workflowVersionId = versionPick.value;
          const ex = await api('POST', `/api/workflows/${encodeURIComponent(id)}/execute`, body);
          location.hash = `#/executions/${ex.execution_uuid}`;
        } catch (err) {
          execErrors.show(err);
        }
      },
    },
      h('label', {}, 'Input payload', h('span', {}, w.current_version?.specification?.payloadSchema ? 'JSON that fits the payload schema below.' : 'JSON; leave empty for none.'), payload),
      w.current_version?.specification?.payloadSchema ? h('details', {}, h('summary', {}, 'Payload schema'), h('pre', { 'data-testid': 'payload-schema' }, JSON.stringify(w.current_version.specification.payloadSchema, null, 2))) : null,
      h('label', {}, 'Version', h('span', {}, 'Choose a draft to try it before publishing it.'), versionPick),
      execError,
      h('button', { type: 'submit', 'data-testid': 'execute' }, 'Execute'),
    ),
    h('h2', {}, 'Recent executions'),
    executionsTable(executions.items),
    h('h2', {}, `Versions (${versions.total})`),
    h('table', { 'data-testid': 'versions' },
      h('thead', {}, h('tr', {}, ['Version', 'Created', 'Status', 'Trigger', 'Next run', 'Specification'].map((t) => h('th', {}, t)))),
      h('tbody', {}, [...versions.items].reverse().map((v) =>
        h('tr', { 'data-testid': 'version-row' },
          h('td', {}, `v${v.version}`, v.is_current ? h('span', { class: 'muted' }, ' (current)') : null,
            h('div', { class: 'muted', 'data-testid': 'version-runs' }, v === newestPublished ? 'runs by default' : v.status === 'draft' ? 'draft: runs only when chosen' : 'older: runs only when chosen'),
            cachedPath(id, v)),
          h('td', {}, fmtDate(v.created_at)),
          versionTriggerCells(id, v, () => workflowPage(id)),
          h('td', {}, h('details', {}, h('summary', {}, v.specification?.prompt?.slice(0, 80) ?? ''), h('pre', {}, JSON.stringify(v.specification, null, 2)))),
        ))),
    ),
    h('h2', {}, 'Edit'),
    workflowForm(w, async (body) => {
      await api('PATCH', `/api/workflows/${encodeURIComponent(id)}`, body);
      await workflowPage(id);
    }),
    h('h2', {}, 'Delete'),
    h('button', {
      class: 'danger',
      'data-testid': 'delete-workflow',
      onclick: async () => {
        if (!confirm(`Delete “${w.name}”, all its versions and all its executions?`)) return;
        await api('DELETE', `/api/workflows/${encodeURIComponent(id)}`);
        location.hash = '#/workflows';
      },
    }, 'Delete workflow'),
  );
  // Made once the fields are in the page (each error goes right after its field); used by the submit handler.
  const execErrors = fieldErrors({ inputPayload: payload, workflowVersionId: versionPick }, execError);
}

/** What a workflow's executions cost together, and over how many (those whose cost is known). */
function workflowCost(w) {
  const n = w.costed_executions ?? 0;
  return n === 0 ? '—' : `${fmtUsd(w.cost_usd)} over ${n} execution${n === 1 ? '' : 's'}`;
}

function executionsTable(items) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'No execution yet.');
  return h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'executions' },
    h('thead', {}, h('tr', {}, ['Status', 'Workflow', 'Created', 'Duration', 'Steps', 'Actions', 'Screenshots', 'Cost', 'Error'].map((t) => h('th', {}, t)))),
    h('tbody', {}, items.map((e) =>
      h('tr', { 'data-testid': 'execution-row', 'data-id': e.execution_uuid },
        h('td', {}, h('a', { href: `#/executions/${e.execution_uuid}` }, statusBadge(e.status)), e.status === 'waiting' ? h('span', { class: 'waiting-you', 'data-testid': 'waiting-for-you' }, ' waiting for you') : null),
        h('td', {}, e.workflow_name, h('span', { class: 'muted' }, ` v${e.version ?? ''}`)),
        h('td', {}, fmtDate(e.created_at), ' ', scheduleTag(e)),
        h('td', {}, fmtMs(e.duration_ms)),
        h('td', {}, e.n_steps),
        h('td', {}, e.n_agent_actions),
        h('td', {}, e.n_screenshots),
        h('td', { 'data-testid': 'execution-cost' }, fmtUsd(e.cost_usd)),
        h('td', { 'data-testid': 'execution-error', class: e.error ? 'error' : 'muted' }, e.error ? `${e.error.code}: ${e.error.message}` : ''),
      ))),
  ));
}

/** Runs `fn` now and every POLL_MS until it answers false or the page changes. */
function poll(fn, onError = (err) => render(errorBox(err))) {
  let timer;
  let stopped = false;
  const tick = async () => {
    try {
      const again = await fn();
      if (again === false) return;
    } catch (err) {
      // The page was left: nothing to draw, nothing more to poll.
      if (err instanceof StalePage) return;
      onError(err);
      if (err instanceof ApiError && (err.status === 401 || err.status === 404)) return;
    }
    if (!stopped) timer = setTimeout(tick, POLL_MS);
  };
  cleanup = () => {
    stopped = true;
    clearTimeout(timer);
  };
  return tick();
}

const STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed'] as const;

/** The executions, filtered by status and workflow (kept in the address: `#/executions?status=failed&workflow=…`). */
async function executionsPage(query: URLSearchParams) {
  const workflows = await api('GET', '/api/workflows?limit=200');
  const status = h('select', { name: 'status', 'data-testid': 'filter-status' }, h('option', { value: '' }, 'any status'), STATUSES.map((s) => h('option', { value: s }, s)));
  status.value = query.get('status') ?? '';
  const workflow = h('select', { name: 'workflow', 'data-testid': 'filter-workflow' }, h('option', { value: '' }, 'any workflow'), workflows.items.map((w) => h('option', { value: w.workflow_uuid }, w.name)));
  workflow.value = query.get('workflow') ?? '';
  const change = () => {
    const q = new URLSearchParams();
    if (status.value) q.set('status', status.value);
    if (workflow.value) q.set('workflow', workflow.value);
    location.hash = `#/executions${q.size ? `?${q}` : ''}`;
  };
  status.addEventListener('change', change);
  workflow.addEventListener('change', change);
  const filters = h('div', { class: 'row filters' }, h('label', {}, 'Status', status), h('label', {}, 'Workflow', workflow));
  const params = new URLSearchParams({ limit: '100' });
  if (status.value) params.set('status', status.value);
  if (workflow.value) params.set('workflow_uuid', workflow.value);
  const heading = h('h1', {}, 'Executions');
  const body = h('div');
  render(heading, filters, body);
  return poll(async () => {
    const list = await api('GET', `/api/executions?${params}`);
    heading.textContent = `Executions (${list.total})`;
    body.replaceChildren(executionsTable(list.items));
  });
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  newPage();
  cleanup();
  cleanup = () => {};
  const [hash = '/workflows', search = ''] = (location.hash.replace(/^#/, '') || '/workflows').split('?');
  const parts = hash.split('/').filter(Boolean);
  void updateNav(parts[0] ?? 'workflows');
  try {
    if (parts[0] === 'settings') {
      await settingsPage();
      if (parts[1] === 'api-keys' || parts[1] === 'webhooks') document.getElementById(parts[1])?.scrollIntoView();
      return;
    }
    if (parts[0] === 'sign-out') return await signOut();
    if (parts[0] === 'workflows' && parts[1] === 'new') return newWorkflowPage();
    if (parts[0] === 'workflows' && parts[1]) return await workflowPage(decodeURIComponent(parts[1]));
    if (parts[0] === 'executions' && parts[1]) {
      cleanup = executionPage(decodeURIComponent(parts[1]));
      return;
    }
    if (parts[0] === 'executions') return await executionsPage(new URLSearchParams(search));
    if (parts[0] === 'profiles') return await profilesPage();
    if (parts[0] === undefined || parts[0] === 'workflows') return await workflowsPage();
    cleanup();
    return notFoundPage();
  } catch (err) {
    // A 401 has already sent the page to the sign-in form.
    if (err instanceof ApiError && err.status === 404) {
      cleanup();
      return notFoundPage();
    }
    // An answer for a page already left draws nothing (StalePage), nor does a 401 (sent to the sign-in form).
    if (err instanceof StalePage) return;
    if (!(err instanceof ApiError && err.status === 401)) render(errorBox(err));
  }
}

/** The nav: the current page marked, and "Sign in" or "Sign out" as the session is. */
async function updateNav(page: string) {
  for (const a of document.querySelectorAll<HTMLAnchorElement>('header nav a[data-page]')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const signed = await fetch('/api/session').then((r) => r.ok, () => false);
  const link = document.querySelector<HTMLAnchorElement>('[data-testid=nav-session]');
  if (!link) return;
  link.textContent = signed ? 'Sign out' : 'Sign in';
  link.href = signed ? '#/sign-out' : '#/settings';
}

window.addEventListener('hashchange', route);
route();
