// The dashboard: plain JS modules, no framework, no build step. It offers what the API offers
// (workflows: create, edit → new version, versions, delete, execute; executions: list, page with
// live view and step timeline; Settings → API Keys) through the same endpoints, signed in by an
// HttpOnly session cookie: the key is given once on the Settings page (or a login link does it)
// and never kept by the page. Text from the API is always inserted as text nodes, never as HTML.

import { ApiError, api, errorBox, fmtDate, fmtMs, fmtUsd, h, render, statusBadge } from './dom.js';
import { executionPage } from './execution.js';
import { profilesPage } from './profiles.js';
import { settingsPage } from './settings.js';
import { currentTriggerLine, scheduleTag, triggerFormFields, versionTriggerCells } from './triggers.js';

const POLL_MS = 2000;
/** Stops what the current page runs in the background (polling, the live stream). */
let cleanup = () => {};

function parseJsonField(text, label) {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${label}: not valid JSON (${e.message})`);
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
  const field = (label, name, el, hint) => h('label', {}, label, hint ? h('span', {}, hint) : null, Object.assign(el, { name }));
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
  const error = h('div');
  const form = h('form', {
    'data-testid': 'workflow-form',
    onsubmit: async (e) => {
      e.preventDefault();
      error.replaceChildren();
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
          ...trigger.read(parseJsonField),
        };
        if (!current) for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
        await onSubmit(body);
      } catch (err) {
        error.replaceChildren(errorBox(err));
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
    trigger.elements,
    error,
    h('button', { type: 'submit', 'data-testid': 'save-workflow' }, current ? 'Save as new version' : 'Create workflow'),
  );
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
        execError.replaceChildren();
        try {
          const input = parseJsonField(payload.value, 'Input payload');
          const ex = await api('POST', `/api/workflows/${encodeURIComponent(id)}/execute`, input === undefined ? {} : { inputPayload: input });
          location.hash = `#/executions/${ex.execution_uuid}`;
        } catch (err) {
          execError.replaceChildren(errorBox(err));
        }
      },
    },
      h('label', {}, 'Input payload', h('span', {}, 'JSON; leave empty for none.'), payload),
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
          h('td', {}, `v${v.version}`, v.is_current ? h('span', { class: 'muted' }, ' (current)') : null),
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
}

/** What a workflow's executions cost together, and over how many (those whose cost is known). */
function workflowCost(w) {
  const n = w.costed_executions ?? 0;
  return n === 0 ? '—' : `${fmtUsd(w.cost_usd)} over ${n} execution${n === 1 ? '' : 's'}`;
}

function executionsTable(items) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'No execution yet.');
  return h('table', { 'data-testid': 'executions' },
    h('thead', {}, h('tr', {}, ['Status', 'Workflow', 'Created', 'Duration', 'Steps', 'Actions', 'Screenshots', 'Cost'].map((t) => h('th', {}, t)))),
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
      ))),
  );
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

function executionsPage() {
  return poll(async () => {
    const list = await api('GET', '/api/executions?limit=100');
    render(h('h1', {}, `Executions (${list.total})`), executionsTable(list.items));
  });
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  cleanup();
  cleanup = () => {};
  const hash = location.hash.replace(/^#/, '') || '/workflows';
  const parts = hash.split('/').filter(Boolean);
  try {
    if (parts[0] === 'settings') {
      await settingsPage();
      if (parts[1] === 'api-keys') document.getElementById('api-keys')?.scrollIntoView();
      return;
    }
    if (parts[0] === 'sign-out') return await signOut();
    if (parts[0] === 'workflows' && parts[1] === 'new') return newWorkflowPage();
    if (parts[0] === 'workflows' && parts[1]) return await workflowPage(decodeURIComponent(parts[1]));
    if (parts[0] === 'executions' && parts[1]) {
      cleanup = executionPage(decodeURIComponent(parts[1]));
      return;
    }
    if (parts[0] === 'executions') return await executionsPage();
    if (parts[0] === 'profiles') return await profilesPage();
    return await workflowsPage();
  } catch (err) {
    // A 401 has already sent the page to the sign-in form.
    if (!(err instanceof ApiError && err.status === 401)) render(errorBox(err));
  }
}

window.addEventListener('hashchange', route);
route();
