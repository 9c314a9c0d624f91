// The dashboard: plain JS, no framework, no build step. It offers what the API offers
// (workflows: create, edit → new version, versions, delete, execute; executions: list, page)
// and talks to the same endpoints with the same X-Service-Key. Text from the API is always
// inserted as text nodes, never as HTML.

const KEY_STORAGE = 'serviceKey';
const POLL_MS = 2000;
const app = document.getElementById('app');
let stopPolling = () => {};

// ---- small helpers -----------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

function render(...nodes) {
  app.replaceChildren(...nodes);
}

const fmtDate = (s) => (s ? new Date(s).toLocaleString() : '—');
const fmtMs = (ms) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
const statusBadge = (s) => h('span', { class: `status ${s}`, 'data-testid': 'status' }, s);

function getKey() {
  return localStorage.getItem(KEY_STORAGE);
}

function setKey(key) {
  localStorage.setItem(KEY_STORAGE, key);
  // <video> and <track> cannot send headers: the server also reads the key from this cookie,
  // which only /artifacts/ receives.
  document.cookie = `service_key=${encodeURIComponent(key)}; path=/artifacts; SameSite=Strict`;
}

class ApiError extends Error {
  constructor(status, body) {
    const detail = Array.isArray(body?.detail) ? body.detail.map((d) => `${(d.loc || []).join('.')}: ${d.msg}`).join('\n') : JSON.stringify(body);
    super(`${status}: ${detail}`);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { 'X-Service-Key': getKey() ?? '' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : undefined;
  if (res.status === 401) {
    localStorage.removeItem(KEY_STORAGE);
    location.hash = '#/settings';
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

function errorBox(error) {
  return h('p', { class: 'error', role: 'alert', 'data-testid': 'error' }, error instanceof Error ? error.message : String(error));
}

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

function settingsPage() {
  const input = h('input', { name: 'key', type: 'password', autocomplete: 'off', required: true, 'data-testid': 'api-key' });
  render(
    h('h1', {}, 'API key'),
    h('form', {
      onsubmit: (e) => {
        e.preventDefault();
        setKey(input.value.trim());
        location.hash = '#/workflows';
      },
    },
      h('label', {}, 'X-Service-Key', h('span', {}, 'One of the keys in API_KEYS. Kept in this browser only.'), input),
      h('button', { type: 'submit' }, 'Save'),
    ),
  );
}

async function workflowsPage() {
  const list = await api('GET', '/api/workflows?limit=200');
  render(
    h('div', { class: 'row' }, h('h1', {}, 'Workflows'), h('a', { href: '#/workflows/new', 'data-testid': 'new-workflow' }, 'New workflow')),
    list.items.length === 0
      ? h('p', { class: 'muted' }, 'No workflow yet.')
      : h('table', {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Slug'), h('th', {}, 'Version'), h('th', {}, 'Updated'))),
          h('tbody', {}, list.items.map((w) =>
            h('tr', { 'data-testid': 'workflow-row' },
              h('td', {}, h('a', { href: `#/workflows/${w.workflow_uuid}` }, w.name)),
              h('td', {}, w.slug),
              h('td', {}, w.current_version ? `v${w.current_version.version}` : '—'),
              h('td', {}, fmtDate(w.updated_at)),
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
      h('thead', {}, h('tr', {}, h('th', {}, 'Version'), h('th', {}, 'Created'), h('th', {}, 'Specification'))),
      h('tbody', {}, [...versions.items].reverse().map((v) =>
        h('tr', { 'data-testid': 'version-row' },
          h('td', {}, `v${v.version}`, v.is_current ? h('span', { class: 'muted' }, ' (current)') : null),
          h('td', {}, fmtDate(v.created_at)),
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

function executionsTable(items) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'No execution yet.');
  return h('table', { 'data-testid': 'executions' },
    h('thead', {}, h('tr', {}, ['Status', 'Workflow', 'Created', 'Duration', 'Steps', 'Actions', 'Screenshots'].map((t) => h('th', {}, t)))),
    h('tbody', {}, items.map((e) =>
      h('tr', { 'data-testid': 'execution-row', 'data-id': e.execution_uuid },
        h('td', {}, h('a', { href: `#/executions/${e.execution_uuid}` }, statusBadge(e.status))),
        h('td', {}, e.workflow_name, h('span', { class: 'muted' }, ` v${e.version ?? ''}`)),
        h('td', {}, fmtDate(e.created_at)),
        h('td', {}, fmtMs(e.duration_ms)),
        h('td', {}, e.n_steps),
        h('td', {}, e.n_agent_actions),
        h('td', {}, e.n_screenshots),
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
  stopPolling = () => {
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

const artifactUrl = (id, name) => `/artifacts/executions/${encodeURIComponent(id)}/${name}`;

async function fetchArtifact(id, name) {
  const res = await fetch(artifactUrl(id, name), { headers: { 'X-Service-Key': getKey() ?? '' } });
  return res.ok ? res.text() : undefined;
}

function executionPage(id) {
  const summary = h('div');
  const media = h('div', { 'data-testid': 'media' }, h('p', { class: 'muted' }, 'The video appears when the run ends.'));
  const output = h('div');
  const log = h('div');
  render(h('h1', {}, 'Execution'), summary, h('div', { class: 'split' }, h('div', {}, media, h('h2', {}, 'Output'), output), h('div', {}, h('h2', {}, 'Log'), log)));

  let artifactsLoaded = false;
  return poll(async () => {
    const e = await api('GET', `/api/executions/${encodeURIComponent(id)}`);
    summary.replaceChildren(
      h('dl', {},
        h('dt', {}, 'Status'), h('dd', {}, statusBadge(e.status)),
        h('dt', {}, 'Workflow'), h('dd', {}, h('a', { href: `#/workflows/${e.workflow_uuid}` }, e.workflow_name), ` v${e.version ?? ''}`),
        h('dt', {}, 'Created'), h('dd', {}, fmtDate(e.created_at)),
        h('dt', {}, 'Duration'), h('dd', {}, fmtMs(e.duration_ms)),
        h('dt', {}, 'Counters'), h('dd', { 'data-testid': 'counters' }, `${e.n_steps} steps · ${e.n_agent_actions} actions · ${e.n_screenshots} screenshots`),
        e.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, `${e.error.code}: ${e.error.message}`)] : null,
        h('dt', {}, 'Input'), h('dd', {}, h('code', {}, JSON.stringify(e.input_payload))),
      ),
    );
    const ended = e.status === 'completed' || e.status === 'failed';
    if (ended && !artifactsLoaded) {
      artifactsLoaded = true;
      await loadArtifacts(id, { media, output, log });
    }
    return !ended;
  }, (err) => summary.replaceChildren(errorBox(err)));
}

async function loadArtifacts(id, { media, output, log }) {
  const [head, vtt, out, logs] = await Promise.all([
    fetch(artifactUrl(id, 'video.mp4'), { method: 'HEAD' }),
    fetch(artifactUrl(id, 'steps.vtt'), { method: 'HEAD' }),
    fetchArtifact(id, 'output.json'),
    fetchArtifact(id, 'logs.jsonl'),
  ]);
  if (head.ok) {
    const video = h('video', { controls: true, preload: 'metadata', src: artifactUrl(id, 'video.mp4'), 'data-testid': 'video' });
    if (vtt.ok) video.append(h('track', { kind: 'captions', label: 'Steps', srclang: 'en', default: true, src: artifactUrl(id, 'steps.vtt') }));
    media.replaceChildren(video);
  } else {
    media.replaceChildren(h('p', { class: 'muted' }, 'No video for this execution.'));
  }
  output.replaceChildren(out === undefined ? h('p', { class: 'muted' }, 'No output.json.') : h('pre', { 'data-testid': 'output' }, prettyJson(out)));
  if (logs === undefined) {
    log.replaceChildren(h('p', { class: 'muted' }, 'No logs.jsonl.'));
  } else {
    const events = logs.split('\n').filter(Boolean).slice(-500).map(describeEvent);
    log.replaceChildren(h('pre', { 'data-testid': 'log' }, events.join('\n')));
  }
}

function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function describeEvent(line) {
  try {
    const { type, time, ts, ...rest } = JSON.parse(line);
    const at = time ?? ts;
    return `${at ? `${String(at).slice(11, 23)} ` : ''}${type ?? ''} ${JSON.stringify(rest)}`;
  } catch {
    return line;
  }
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  stopPolling();
  stopPolling = () => {};
  const hash = location.hash.replace(/^#/, '') || '/workflows';
  const parts = hash.split('/').filter(Boolean);
  if (!getKey() && parts[0] !== 'settings') {
    location.hash = '#/settings';
    return;
  }
  try {
    if (parts[0] === 'settings') return settingsPage();
    if (parts[0] === 'workflows' && parts[1] === 'new') return newWorkflowPage();
    if (parts[0] === 'workflows' && parts[1]) return await workflowPage(decodeURIComponent(parts[1]));
    if (parts[0] === 'executions' && parts[1]) return await executionPage(decodeURIComponent(parts[1]));
    if (parts[0] === 'executions') return await executionsPage();
    return await workflowsPage();
  } catch (err) {
    render(errorBox(err));
  }
}

window.addEventListener('hashchange', route);
if (getKey()) setKey(getKey());
route();
