import type { Logger } from '../telemetry/types.js';
import { createExecution } from './create-execution.js';
import { notFound, readJsonBody, sendJson, unprocessable } from './http-utils.js';
import type { JobQueue } from './job-queue.js';
import type { createRouter } from './router.js';
import type { Schedules } from './schedules.js';
import type { Store, VersionView, WorkflowRow } from './store.js';
import { SPECIFICATION_FIELDS, checkSchemaCompiles, normaliseWorkflowBody, parsePage, validateBody, validateInputPayload } from './validation.js';
import { TRIGGER_FIELDS, defaultInput, presentVersion, resolveTrigger } from './version-triggers.js';

/**
 * Workflow endpoints: the seed's create / edit (a new version) / delete (cascade) / versions
 * list / execute, plus two reads the dashboard needs (`GET /api/workflows`, `GET
 * /api/workflows/{id}`).
 */

export interface RouteDeps {
  store: Store;
  queue: JobQueue;
  logger: Logger;
  schedules: Schedules;
  /** Test-only: schedules may fire every second (docs/api.md#triggers). */
  allowEverySecond: boolean;
}

type Router = ReturnType<typeof createRouter>;

/** A workflow as the API answers it: its fields and its current version. */
export interface WorkflowView extends WorkflowRow {
  current_version: VersionView | null;
}

export async function workflowView(deps: Pick<RouteDeps, 'store' | 'schedules'>, row: WorkflowRow): Promise<WorkflowView> {
  const { workflow_uuid, name, description, slug, created_at, updated_at } = row;
  const [current] = await presentVersions(deps, workflow_uuid, (await deps.store.currentVersion(workflow_uuid)) ?? []);
  return { workflow_uuid, name, description, slug, created_at, updated_at, current_version: current ?? null };
}

/** Versions as answered: `next_run_at` on the current one when it is scheduled (version-triggers.ts). */
export async function presentVersions(deps: Pick<RouteDeps, 'schedules'>, workflowId: string, versions: VersionView | VersionView[]): Promise<VersionView[]> {
  const list = Array.isArray(versions) ? versions : [versions];
  const scheduled = list.some((v) => v.is_current && v.status === 'published' && v.trigger_type === 'schedule');
  const next = scheduled ? await deps.schedules.nextRunAt(workflowId) : null;
  return list.map((v) => presentVersion(v, v.is_current ? next : null));
}

export function addWorkflowRoutes(router: Router, deps: RouteDeps): void {
  const { store, queue, logger, schedules } = deps;
  const triggerOpts = { allowEverySecond: deps.allowEverySecond };
  const view = (row: WorkflowRow) => workflowView(deps, row);

  router.add('GET', '/api/workflows', async ({ res, query }) => {
    const { limit, offset } = parsePage(query);
    const page = await store.listWorkflows(limit, offset);
    sendJson(res, 200, { items: await Promise.all(page.items.map(view)), total: page.total });
  });

  router.add('POST', '/api/workflows', async ({ req, res }) => {
    const body = validateBody<Record<string, unknown>>('WorkflowCreate', normaliseWorkflowBody(await readJsonBody(req)));
    checkSchemaCompiles(body.payloadSchema, ['body', 'payloadSchema']);
    checkSchemaCompiles(body.outputSchema, ['body', 'outputSchema']);
    const specification = pickSpecification(body);
    const trigger = resolveTrigger(body, undefined, (payload, loc) => validateInputPayload(specification.payloadSchema, payload, loc), triggerOpts);
    const name = typeof body.name === 'string' ? body.name : defaultName(String(body.prompt));
    const row = await store.createWorkflow({ name, description: typeof body.description === 'string' ? body.description : '', specification, trigger });
    await schedules.sync(row.workflow_uuid);
    logger.info({ workflowId: row.workflow_uuid }, 'workflow created');
    sendJson(res, 201, await view(row));
  });

  router.add('GET', '/api/workflows/:id', async ({ res, params }) => {
    const row = await store.getWorkflow(params.id as string);
    if (!row) throw notFound(['path', 'id'], 'workflow');
    sendJson(res, 200, await view(row));
  });

  router.add('PATCH', '/api/workflows/:id', async ({ req, res, params }) => {
    const id = params.id as string;
    const body = validateBody<Record<string, unknown>>('WorkflowUpdate', normaliseWorkflowBody(await readJsonBody(req)));
    const edited = Object.keys(body).filter((k) => k === 'name' || k === 'description' || (SPECIFICATION_FIELDS as readonly string[]).includes(k) || TRIGGER_FIELDS.includes(k));
    if (edited.length === 0) throw unprocessable([{ loc: ['body'], msg: 'no editable field given', type: 'missing' }]);
    checkSchemaCompiles(body.payloadSchema, ['body', 'payloadSchema']);
    checkSchemaCompiles(body.outputSchema, ['body', 'outputSchema']);
    const current = await store.currentVersion(id);
    if (!current) throw notFound(['path', 'id'], 'workflow');
    const specification: Record<string, unknown> = { ...current.specification };
    for (const field of SPECIFICATION_FIELDS) {
      if (!(field in body)) continue;
      if (body[field] === null) delete specification[field];
      else specification[field] = body[field];
    }
    const trigger = resolveTrigger(body, current, (payload, loc) => validateInputPayload(specification.payloadSchema, payload, loc), triggerOpts);
    const changes: Parameters<Store['updateWorkflow']>[1] = { specification, trigger };
    if (typeof body.name === 'string') changes.name = body.name;
    if (typeof body.description === 'string') changes.description = body.description;
    const row = await store.updateWorkflow(id, changes);
    if (!row) throw notFound(['path', 'id'], 'workflow');
    await schedules.sync(id);
    sendJson(res, 200, await view(row));
  });

  router.add('DELETE', '/api/workflows/:id', async ({ res, params }) => {
    const id = params.id as string;
    const versions = await store.listVersions(id).catch(() => []);
    const executions = await store.deleteWorkflow(id);
    if (!executions) throw notFound(['path', 'id'], 'workflow');
    await schedules.remove(id);
    // A queued execution's job would only meet a 404 at `started`: out of the queue now. Every
    // other job of the workflow loses its input's secrets with it (docs/secrets.md).
    for (const execution of executions) {
      await queue.forget(execution.execution_uuid, execution.input_payload).catch((error: unknown) => {
        logger.warn({ executionId: execution.execution_uuid, err: String(error) }, 'could not remove the job of a deleted execution');
      });
    }
    // Its versions' run caches go with it.
    for (const version of versions) await queue.clearRunCache(version.workflow_version_uuid).catch(() => false);
    logger.info({ workflowId: id, executionsDeleted: executions.length }, 'workflow deleted');
    res.writeHead(204).end();
  });

  // The version's run cache (contract §11): the next execution of it runs with the model again.
  router.add('DELETE', '/api/workflows/:id/versions/:versionId/cache', async ({ res, params }) => {
    const id = params.id as string;
    const versionId = params.versionId as string;
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'id'], 'workflow');
    if (!(await store.listVersions(id)).some((v) => v.workflow_version_uuid === versionId)) throw notFound(['path', 'versionId'], 'version');
    const cleared = await queue.clearRunCache(versionId);
    logger.info({ workflowId: id, versionId, cleared }, 'run cache cleared');
    sendJson(res, 200, { cleared });
  });

  router.add('GET', '/api/workflows/:workflow_uuid/versions', async ({ res, params }) => {
    const id = params.workflow_uuid as string;
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'workflow_uuid'], 'workflow');
    const items = await presentVersions(deps, id, await store.listVersions(id));
    sendJson(res, 200, { items, total: items.length });
  });

  router.add('POST', '/api/workflows/:workflowId/execute', async ({ req, res, params }) => {
    const id = params.workflowId as string;
    const raw = await readJsonBody(req);
    const body = validateBody<{ inputPayload?: unknown }>('ExecuteRequest', raw === undefined ? {} : raw);
    const workflow = await store.getWorkflow(id);
    const version = workflow ? await store.currentVersion(id) : undefined;
    if (!workflow || !version) throw notFound(['path', 'workflowId'], 'workflow');
    // Without inputPayload the version's default input is used (null when it has none).
    const inputPayload = 'inputPayload' in body ? body.inputPayload : defaultInput(version);
    const execution = await createExecution(deps, { workflow, version, inputPayload, trigger: 'manual' });
    sendJson(res, 201, execution);
  });
}

function pickSpecification(body: Record<string, unknown>): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  for (const field of SPECIFICATION_FIELDS) {
    if (body[field] !== undefined && body[field] !== null) spec[field] = body[field];
  }
  return spec;
}

function defaultName(prompt: string): string {
  const line = prompt.trim().split('\n')[0] ?? 'Workflow';
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
