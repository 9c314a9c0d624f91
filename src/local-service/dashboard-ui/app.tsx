// The dashboard: Preact components in TypeScript, typed against the contract (the z.infer types
// of src/contract/, imported with `import type` so that no zod code reaches the bundle), bundled by
// esbuild at build time (scripts/build-dashboard.ts). It offers what the API offers
// (workflows: create, edit → new version, versions, delete, execute; executions: list, page with
// live view and step timeline; Settings → API Keys) through the same endpoints, signed in by an
// HttpOnly session cookie: the key is given once on the Settings page (or a login link does it)
// and never kept by the page. Text from the API is always rendered as text, never as HTML.

import { useEffect, useRef, useState } from 'preact/hooks';
import type { ExecutionList, ExecutionRow } from '../../contract/executions.js';
import type { VersionList, Workflow, WorkflowList, WorkflowVersion } from '../../contract/workflows.js';
import { ApiError, ErrorBox, Field, StalePage, StatusBadge, api, fmtDate, fmtMs, fmtUsd, formText, newPage, notFoundPage, show, useFieldErrors } from './dom.js';
import { SPEC_FIELD_NAMES, SpecFields, readSpecFields } from './spec-fields.js';
import { CachedPath } from './cache-view.js';
import { executionPage } from './execution.js';
import { profilesPage } from './profiles.js';
import { settingsPage } from './settings.js';
import { CurrentTriggerLine, ScheduleTag, TRIGGER_FIELD_NAMES, TriggerFields, VersionTriggerCells, readTriggerFields } from './triggers.js';

const POLL_MS = 2000;

function parseJsonField(text: string, label: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${label}: not valid JSON (${(e as Error).message})`);
  }
}

const lines = (text: string) => text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);

// ---- pages ---------------------------------------------------------------------------------

async function signOut() {
  await fetch('/api/session', { method: 'DELETE' });
  location.hash = '#/settings';
}

async function workflowsPage() {
  const list = await api<WorkflowList>('GET', '/api/workflows?limit=200');
  show(
    <>
      <div class="row"><h1>Workflows</h1><a href="#/workflows/new" data-testid="new-workflow">New workflow</a></div>
      {list.items.length === 0 ? (
        <p class="muted">No workflow yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>Slug</th><th>Version</th><th>Updated</th><th>Cost</th></tr></thead>
            <tbody>
              {list.items.map((w) => (
                <tr data-testid="workflow-row">
                  <td><a href={`#/workflows/${w.workflow_uuid}`}>{w.name}</a></td>
                  <td>{w.slug}</td>
                  <td>{w.current_version ? `v${w.current_version.version}` : '—'}</td>
                  <td>{fmtDate(w.updated_at)}</td>
                  <td data-testid="workflow-cost">{workflowCost(w)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>,
  );
}

const FORM_FIELDS = ['name', 'description', 'prompt', 'allowedDomains', 'startUrl', 'steps', 'payloadSchema', 'outputSchema', 'maxSteps', 'timeoutMs', 'model', ...SPEC_FIELD_NAMES, ...TRIGGER_FIELD_NAMES] as const;

/** The create/edit form; `current` is the workflow when editing. */
function WorkflowForm({ current, onSubmit }: { current?: Workflow; onSubmit: (body: Record<string, unknown>) => Promise<void> }) {
  const spec = current?.current_version?.specification;
  const json = (v: unknown) => (v === undefined ? '' : JSON.stringify(v, null, 2));
  const errors = useFieldErrors(FORM_FIELDS);
  const submit = async (e: SubmitEvent) => {
    e.preventDefault();
    errors.clear();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const text = (name: string) => formText(f, name);
    try {
      // An emptied optional field is sent as null: on an edit it is removed from the version.
      const opt = (v: unknown) => (v === undefined || v === '' ? null : v);
      const body: Record<string, unknown> = {
        name: text('name').trim() || undefined,
        description: text('description'),
        prompt: text('prompt'),
        allowedDomains: lines(text('allowedDomains')),
        startUrl: opt(text('startUrl').trim()),
        steps: text('steps').trim() ? text('steps').split('\n').map((s) => s.trim()).filter(Boolean) : null,
        payloadSchema: opt(parseJsonField(text('payloadSchema'), 'Payload schema')),
        outputSchema: opt(parseJsonField(text('outputSchema'), 'Output schema')),
        maxSteps: text('maxSteps') ? Number(text('maxSteps')) : null,
        timeoutMs: text('timeoutMs') ? Number(text('timeoutMs')) : null,
        model: opt(text('model').trim()),
        ...readSpecFields(f),
        ...readTriggerFields(f, current, parseJsonField),
      };
      if (!current) for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
      await onSubmit(body);
    } catch (err) {
      if (!(err instanceof StalePage)) errors.show(err);
    }
  };
  const input = (name: string, value: string, more: Record<string, unknown> = {}) => <input name={name} defaultValue={value} {...more} {...errors.field(name)} />;
  const area = (name: string, value: string, more: Record<string, unknown> = {}) => <textarea name={name} defaultValue={value} {...more} {...errors.field(name)} />;
  const num = (v: number | undefined) => (v === undefined ? '' : String(v));
  return (
    <form data-testid="workflow-form" onSubmit={(e) => void submit(e)}>
      <Field label="Name" name="name" errors={errors}>{input('name', current?.name ?? '')}</Field>
      <Field label="Description" name="description" errors={errors}>{input('description', current?.description ?? '')}</Field>
      <Field label="Prompt" hint="The business process, in words." name="prompt" errors={errors}>{area('prompt', spec?.prompt ?? '', { required: true })}</Field>
      <Field label="Allowed domains" hint="Comma-separated; *.example.com allows subdomains." name="allowedDomains" errors={errors}>{input('allowedDomains', (spec?.allowedDomains ?? []).join(', '), { required: true })}</Field>
      <Field label="Start URL" name="startUrl" errors={errors}>{input('startUrl', spec?.startUrl ?? '')}</Field>
      <Field label="Steps" hint="One per line." name="steps" errors={errors}>{area('steps', (spec?.steps ?? []).join('\n'))}</Field>
      <Field label="Payload schema" hint="JSON Schema of the input payload." name="payloadSchema" errors={errors}>{area('payloadSchema', json(spec?.payloadSchema))}</Field>
      <Field label="Output schema" hint="JSON Schema of the output." name="outputSchema" errors={errors}>{area('outputSchema', json(spec?.outputSchema))}</Field>
      <div class="row">
        <Field label="Max steps" name="maxSteps" errors={errors}>{input('maxSteps', num(spec?.maxSteps), { type: 'number', min: 1 })}</Field>
        <Field label="Timeout (ms)" name="timeoutMs" errors={errors}>{input('timeoutMs', num(spec?.timeoutMs), { type: 'number', min: 1 })}</Field>
        <Field label="Model" name="model" errors={errors}>{input('model', spec?.model ?? '')}</Field>
      </div>
      <SpecFields spec={spec ?? {}} errors={errors} />
      <TriggerFields current={current} errors={errors} />
      <div>{errors.general}</div>
      <button type="submit" data-testid="save-workflow">{current ? 'Save as new version' : 'Create workflow'}</button>
    </form>
  );
}

function newWorkflowPage() {
  show(
    <>
      <h1>New workflow</h1>
      <WorkflowForm
        onSubmit={async (body) => {
          const w = await api<Workflow>('POST', '/api/workflows', body);
          location.hash = `#/workflows/${w.workflow_uuid}`;
        }}
      />
    </>,
  );
}

async function workflowPage(id: string) {
  const [w, versions, executions] = await Promise.all([
    api<Workflow>('GET', `/api/workflows/${encodeURIComponent(id)}`),
    api<VersionList>('GET', `/api/workflows/${encodeURIComponent(id)}/versions`),
    api<ExecutionList>('GET', `/api/executions?workflow_uuid=${encodeURIComponent(id)}&limit=20`),
  ]);
  show(<WorkflowView id={id} w={w} versions={versions} executions={executions.items} />);
}

function WorkflowView({ id, w, versions, executions }: { id: string; w: Workflow; versions: VersionList; executions: ExecutionRow[] }) {
  const payloadSchema = w.current_version?.specification?.payloadSchema;
  const execErrors = useFieldErrors(['inputPayload', 'workflowVersionId']);
  // Which version runs: by default the newest published one (a newer draft does not block it);
  // any other, a draft included, may be chosen to try it (docs/dashboard.md).
  const newestFirst = [...versions.items].sort((a, b) => b.version - a.version);
  const newestPublished = newestFirst.find((v) => v.status === 'published');
  const execute = async (e: SubmitEvent) => {
    e.preventDefault();
    execErrors.clear();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    try {
      const input = parseJsonField(formText(f, 'inputPayload'), 'Input payload');
      const body: Record<string, unknown> = input === undefined ? {} : { inputPayload: input };
      const version = formText(f, 'workflowVersionId');
      if (version) body.workflowVersionId = version;
      const ex = await api<ExecutionRow>('POST', `/api/workflows/${encodeURIComponent(id)}/execute`, body);
      location.hash = `#/executions/${ex.execution_uuid}`;
    } catch (err) {
      if (!(err instanceof StalePage)) execErrors.show(err);
    }
  };
  const remove = async () => {
    if (!confirm(`Delete “${w.name}”, all its versions and all its executions?`)) return;
    await api('DELETE', `/api/workflows/${encodeURIComponent(id)}`);
    location.hash = '#/workflows';
  };
  const runs = (v: WorkflowVersion) => (v === newestPublished ? 'runs by default' : v.status === 'draft' ? 'draft: runs only when chosen' : 'older: runs only when chosen');
  return (
    <>
      <h1 data-testid="workflow-name">{w.name}</h1>
      <p class="muted">{`${w.slug} · v${w.current_version?.version ?? '?'} · ${w.description || 'no description'}`}</p>
      <CurrentTriggerLine v={w.current_version} />
      <p class="muted" data-testid="workflow-cost">{`Cost: ${workflowCost(w)}`}</p>
      <h2>Execute</h2>
      <form data-testid="execute-form" onSubmit={(e) => void execute(e)}>
        <Field label="Input payload" hint={payloadSchema ? 'JSON that fits the payload schema below.' : 'JSON; leave empty for none.'} name="inputPayload" errors={execErrors}>
          <textarea name="inputPayload" data-testid="input-payload" defaultValue={payloadSchema ? '{}' : ''} {...execErrors.field('inputPayload')} />
        </Field>
        {payloadSchema ? <details><summary>Payload schema</summary><pre data-testid="payload-schema">{JSON.stringify(payloadSchema, null, 2)}</pre></details> : null}
        <Field label="Version" hint="Choose a draft to try it before publishing it." name="workflowVersionId" errors={execErrors}>
          <select name="workflowVersionId" data-testid="execute-version" {...execErrors.field('workflowVersionId')}>
            <option value="">{newestPublished ? `default: the newest published (v${newestPublished.version})` : 'default (no published version)'}</option>
            {newestFirst.map((v) => <option value={v.workflow_version_uuid}>{`v${v.version} (${v.status})`}</option>)}
          </select>
        </Field>
        <div>{execErrors.general}</div>
        <button type="submit" data-testid="execute">Execute</button>
      </form>
      <h2>Recent executions</h2>
      <ExecutionsTable items={executions} />
      <h2>{`Versions (${versions.total})`}</h2>
      <div class="table-wrap">
        <table data-testid="versions">
          <thead><tr>{['Version', 'Created', 'Status', 'Trigger', 'Next run', 'Specification'].map((t) => <th>{t}</th>)}</tr></thead>
          <tbody>
            {[...versions.items].reverse().map((v) => (
              <tr data-testid="version-row" key={v.workflow_version_uuid}>
                <td>
                  {`v${v.version}`}
                  {v.is_current ? <span class="muted"> (current)</span> : null}
                  <div class="muted" data-testid="version-runs">{runs(v)}</div>
                  <CachedPath workflowId={id} v={v} />
                </td>
                <td>{fmtDate(v.created_at)}</td>
                <VersionTriggerCells workflowId={id} v={v} onChange={() => workflowPage(id)} />
                <td><details><summary>{v.specification?.prompt?.slice(0, 80) ?? ''}</summary><pre>{JSON.stringify(v.specification, null, 2)}</pre></details></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Edit</h2>
      <WorkflowForm
        current={w}
        onSubmit={async (body) => {
          await api('PATCH', `/api/workflows/${encodeURIComponent(id)}`, body);
          await workflowPage(id);
        }}
      />
      <h2>Delete</h2>
      <button class="danger" data-testid="delete-workflow" onClick={() => void remove()}>Delete workflow</button>
    </>
  );
}

/** What a workflow's executions cost together, and over how many (those whose cost is known). */
function workflowCost(w: Workflow) {
  const n = w.costed_executions ?? 0;
  return n === 0 ? '—' : `${fmtUsd(w.cost_usd)} over ${n} execution${n === 1 ? '' : 's'}`;
}

function ExecutionsTable({ items }: { items: ExecutionRow[] }) {
  if (items.length === 0) return <p class="muted">No execution yet.</p>;
  return (
    <div class="table-wrap">
      <table data-testid="executions">
        <thead><tr>{['Status', 'Workflow', 'Created', 'Duration', 'Steps', 'Actions', 'Screenshots', 'Cost', 'Error'].map((t) => <th>{t}</th>)}</tr></thead>
        <tbody>
          {items.map((e) => (
            <tr data-testid="execution-row" data-id={e.execution_uuid} key={e.execution_uuid}>
              <td>
                <a href={`#/executions/${e.execution_uuid}`}><StatusBadge status={e.status} /></a>
                {e.status === 'waiting' ? <span class="waiting-you" data-testid="waiting-for-you"> waiting for you</span> : null}
              </td>
              <td>{e.workflow_name}<span class="muted">{` v${e.version ?? ''}`}</span></td>
              <td>{fmtDate(e.created_at)} <ScheduleTag e={e} /></td>
              <td>{fmtMs(e.duration_ms)}</td>
              <td>{e.n_steps}</td>
              <td>{e.n_agent_actions}</td>
              <td>{e.n_screenshots}</td>
              <td data-testid="execution-cost">{fmtUsd(e.cost_usd)}</td>
              <td data-testid="execution-error" class={e.error ? 'error' : 'muted'}>{e.error ? `${e.error.code}: ${e.error.message}` : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed'] as const;

/** The executions, filtered by status and workflow (kept in the address: `#/executions?status=failed&workflow=…`). */
async function executionsPage(query: URLSearchParams) {
  const workflows = await api<WorkflowList>('GET', '/api/workflows?limit=200');
  const status = query.get('status') ?? '';
  const workflow = query.get('workflow') ?? '';
  const params = new URLSearchParams({ limit: '100' });
  if (status) params.set('status', status);
  if (workflow) params.set('workflow_uuid', workflow);
  // The first answer is awaited here, so a 404 or a 401 is the router's, as on every page.
  const first = await api<ExecutionList>('GET', `/api/executions?${params}`);
  show(<Executions workflows={workflows.items} status={status} workflow={workflow} params={params} first={first} />);
}

function Executions({ workflows, status, workflow, params, first }: { workflows: Workflow[]; status: string; workflow: string; params: URLSearchParams; first: ExecutionList }) {
  const [list, setList] = useState<ExecutionList>(first);
  const [error, setError] = useState<unknown>(undefined);
  // Polled every POLL_MS while the page is shown; stopped when it goes.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const tick = async () => {
      try {
        setList(await api<ExecutionList>('GET', `/api/executions?${params}`));
        setError(undefined);
      } catch (err) {
        // The page was left: nothing to draw, nothing more to poll.
        if (err instanceof StalePage) return;
        setError(err);
        if (err instanceof ApiError && (err.status === 401 || err.status === 404)) return;
      }
      if (!stopped) timer = setTimeout(() => void tick(), POLL_MS);
    };
    timer = setTimeout(() => void tick(), POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);
  const statusPick = useRef<HTMLSelectElement>(null);
  const workflowPick = useRef<HTMLSelectElement>(null);
  const change = () => {
    const q = new URLSearchParams();
    if (statusPick.current?.value) q.set('status', statusPick.current.value);
    if (workflowPick.current?.value) q.set('workflow', workflowPick.current.value);
    location.hash = `#/executions${q.size ? `?${q}` : ''}`;
  };
  return (
    <>
      <h1>{`Executions (${list.total})`}</h1>
      <div class="row filters">
        <label>Status
          <select name="status" data-testid="filter-status" ref={statusPick} onChange={change}>
            <option value="">any status</option>
            {STATUSES.map((s) => <option value={s} selected={s === status}>{s}</option>)}
          </select>
        </label>
        <label>Workflow
          <select name="workflow" data-testid="filter-workflow" ref={workflowPick} onChange={change}>
            <option value="">any workflow</option>
            {workflows.map((w) => <option value={w.workflow_uuid} selected={w.workflow_uuid === workflow}>{w.name}</option>)}
          </select>
        </label>
      </div>
      <div>{error === undefined ? <ExecutionsTable items={list.items} /> : <ErrorBox error={error} />}</div>
    </>
  );
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  // Answers still on their way for the page left are dropped (StalePage); its polling and live
  // stream stop when the next page replaces it (show unmounts it).
  newPage();
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
    if (parts[0] === 'executions' && parts[1]) return executionPage(decodeURIComponent(parts[1]));
    if (parts[0] === 'executions') return await executionsPage(new URLSearchParams(search));
    if (parts[0] === 'profiles') return await profilesPage();
    if (parts[0] === undefined || parts[0] === 'workflows') return await workflowsPage();
    return notFoundPage();
  } catch (err) {
    // An answer for a page already left draws nothing (StalePage), nor does a 401 (sent to the sign-in form).
    if (err instanceof StalePage) return;
    if (err instanceof ApiError && err.status === 404) return notFoundPage();
    if (!(err instanceof ApiError && err.status === 401)) show(<ErrorBox error={err} />);
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

window.addEventListener('hashchange', () => void route());
void route();
