import type { FastifyRequest } from 'fastify';
import { EXECUTE_ALIASES, execution, executeRequest } from '../contract/executions.js';
import { camelCaseFields } from '../contract/json.js';
import { pageQuery } from '../contract/lists.js';
import { SPECIFICATION_FIELDS, type Specification } from '../contract/specification.js';
import { EDITABLE_FIELDS, cacheCleared, versionList, workflow, workflowCreate, workflowList, workflowUpdate, type Workflow, type WorkflowRow, type WorkflowVersion } from '../contract/workflows.js';
import type { ProfileKeyring } from '../domain/profile-crypto.js';
import { optionalBody, type App } from './app.js';
import { noTracing } from '../telemetry/tracing.js';
import type { Logger, Tracing } from '../telemetry/types.js';
import { inServerSpan } from './request-span.js';
import { createExecution } from './create-execution.js';
import { notFound, unprocessable } from './http-errors.js';
import type { JobQueue } from './job-queue.js';
import { answer, commonErrors, notFoundAnswer, pathParams, unavailableAnswer } from './openapi.js';
import type { Schedules } from './schedules.js';
import type { Store, VersionView } from './store.js';
import { checkSchemaCompiles, normaliseWorkflowBody, oneSpelling, validateInputPayload } from './validation.js';
import { presentVersion, resolveTrigger } from './version-triggers.js';
import { defaultRunInput } from './default-input.js';
import { OPERATOR, WORKER_READ } from './access.js';
import type { ArtifactEraser } from './artifact-eraser.js';
import { runCacheView } from '../contract/run-cache-view.js';
import { runCacheView as presentRunCache } from './run-cache-view.js';

/**
 * Workflow endpoints: the service description's create / edit (a new version) / delete (cascade) / versions
 * list / execute, plus two reads the dashboard needs (`GET /api/workflows`, `GET
 * /api/workflows/{id}`).
 */

export interface RouteDeps {
  store: Store;
  queue: JobQueue;
  logger: Logger;
  /** Where the service's spans go (docs/operations.md#traces); absent: nowhere. */
  tracing?: Tracing;
  schedules: Schedules;
  /** Test-only: schedules may fire every second (docs/api.md#triggers). */
  allowEverySecond: boolean;
  /** PROFILE_KEYS: seal the secrets of versions' default inputs (default-input.ts); none refuses a default input with secrets. */
  inputKeys?: ProfileKeyring;
  /** Where the executions' artifacts are removed when their workflow is deleted; none: nowhere. */
  artifacts?: ArtifactEraser;
}

const EXECUTE_ROUTE = '/api/workflows/:workflowId/execute';

export async function workflowView(deps: Pick<RouteDeps, 'store' | 'schedules'>, row: WorkflowRow): Promise<Workflow> {
  const { workflow_uuid, name, description, slug, created_at, updated_at } = row;
  const [[current], cost] = await Promise.all([presentVersions(deps, workflow_uuid, (await deps.store.currentVersion(workflow_uuid)) ?? []), deps.store.workflowCost(workflow_uuid)]);
  return { workflow_uuid, name, description, slug, created_at, updated_at, current_version: current ?? null, cost_usd: cost.usd, costed_executions: cost.executions };
}

/** Versions as answered: `next_run_at` on the one that runs by default when it is scheduled (version-triggers.ts). */
export async function presentVersions(deps: Pick<RouteDeps, 'schedules'>, workflowId: string, versions: VersionView | VersionView[]): Promise<WorkflowVersion[]> {
  const list = Array.isArray(versions) ? versions : [versions];
  const scheduled = list.some((v) => v.runs_by_default && v.trigger_type === 'schedule');
  const next = scheduled ? await deps.schedules.nextRunAt(workflowId) : null;
  return list.map((v) => presentVersion(v, v.runs_by_default && v.trigger_type === 'schedule' ? next : null));
}

/** Edit and create bodies take snake_case spellings too: renamed before validation. */
const normalise = async (request: FastifyRequest): Promise<void> => {
  request.body = normaliseWorkflowBody(request.body);
};

export function addWorkflowRoutes(app: App, deps: RouteDeps): void {
  const { store, queue, logger, schedules } = deps;
  const tracing = deps.tracing ?? noTracing;
  const triggerOpts = { allowEverySecond: deps.allowEverySecond, ...(deps.inputKeys ? { inputKeys: deps.inputKeys } : {}) };
  const view = (row: WorkflowRow) => workflowView(deps, row);

  app.get('/api/workflows', {
    config: OPERATOR,
    schema: { summary: 'List workflows (newest first)', querystring: pageQuery, response: { 200: answer('A page of workflows; total counts all.', workflowList), ...commonErrors } },
  }, async (request) => {
    const { limit, offset } = request.query;
    const page = await store.listWorkflows(limit, offset);
    return { items: await Promise.all(page.items.map(view)), total: page.total };
  });

  app.post('/api/workflows', {
    config: OPERATOR,
    preValidation: normalise,
    schema: { summary: 'Create a workflow and publish version 1', body: workflowCreate, response: { 201: answer('The workflow with its current version (1).', workflow), ...commonErrors } },
  }, async (request, reply) => {
    const { body } = request;
    await checkSchemaCompiles(body.payloadSchema, ['body', 'payloadSchema']);
    await checkSchemaCompiles(body.outputSchema, ['body', 'outputSchema']);
    const specification = pickSpecification(body);
    const trigger = await resolveTrigger(body, undefined, (payload, loc) => validateInputPayload(specification.payloadSchema, payload, loc), triggerOpts);
    const row = await store.createWorkflow({ name: body.name ?? defaultName(body.prompt), description: body.description ?? '', specification, trigger });
    await schedules.sync(row.workflow_uuid);
    logger.info({ workflowId: row.workflow_uuid }, 'workflow created');
    return reply.code(201).send(await view(row));
  });

  app.get('/api/workflows/:id', {
    config: OPERATOR,
    schema: { summary: 'One workflow', params: pathParams('id'), response: { 200: answer('The workflow.', workflow), 404: notFoundAnswer, ...commonErrors } },
  }, async (request) => {
    const { id } = request.params;
    const row = await store.getWorkflow(id);
    if (!row) throw notFound(['path', 'id'], 'workflow');
    return view(row);
  });

  app.patch('/api/workflows/:id', {
    config: OPERATOR,
    preValidation: normalise,
    schema: {
      summary: 'Edit a workflow: creates a new current version; previous versions are kept',
      params: pathParams('id'),
      body: workflowUpdate,
      response: { 200: answer('The workflow with its new current version.', workflow), 404: notFoundAnswer, ...commonErrors },
    },
  }, async (request) => {
    const { params: { id }, body } = request;
    if (!EDITABLE_FIELDS.some((field) => Object.hasOwn(body, field))) throw unprocessable([{ loc: ['body'], msg: 'no editable field given', type: 'missing' }]);
    await checkSchemaCompiles(body.payloadSchema, ['body', 'payloadSchema']);
    await checkSchemaCompiles(body.outputSchema, ['body', 'outputSchema']);
    const current = await store.currentVersion(id);
    if (!current) throw notFound(['path', 'id'], 'workflow');
    const specification: Record<string, unknown> = { ...current.specification };
    for (const field of SPECIFICATION_FIELDS) {
      if (!Object.hasOwn(body, field)) continue;
      if (body[field] === null) delete specification[field];
      else specification[field] = body[field];
    }
    const trigger = await resolveTrigger(body, current, (payload, loc) => validateInputPayload(specification.payloadSchema, payload, loc), { ...triggerOpts, payloadSchema: specification.payloadSchema });
    const changes: Parameters<Store['updateWorkflow']>[1] = { specification, trigger };
    if (body.name !== undefined) changes.name = body.name;
    if (body.description !== undefined) changes.description = body.description;
    const row = await store.updateWorkflow(id, changes);
    if (!row) throw notFound(['path', 'id'], 'workflow');
    await schedules.sync(id);
    return view(row);
  });

  app.delete('/api/workflows/:id', {
    config: OPERATOR,
    schema: { summary: 'Delete a workflow with all its versions, executions and their artifacts', params: pathParams('id'), response: { 204: answer('Deleted.'), 404: notFoundAnswer, ...commonErrors } },
  }, async (request, reply) => {
    const { id } = request.params;
    const versions = await store.listVersions(id);
    const executions = await store.deleteWorkflow(id);
    if (!executions) throw notFound(['path', 'id'], 'workflow');
    await schedules.remove(id);
    // A queued execution's job would only meet a 404 at `started`: out of the queue now. Every
    // other job of the workflow loses its input's secrets with it (docs/secrets.md).
    for (const execution of executions) {
      await queue.forget(execution.execution_uuid, execution.input_payload).catch((error: unknown) => {
        logger.warn({ executionId: execution.execution_uuid, err: error }, 'could not remove the job of a deleted execution');
      });
    }
    // Its versions' run caches go with it.
    for (const version of versions) {
      await queue.clearRunCache(version.workflow_version_uuid).catch((error: unknown) => {
        logger.warn({ versionId: version.workflow_version_uuid, err: error }, 'could not clear the run cache of a deleted version');
      });
    }
    // And their artifacts: nothing of the workflow is served afterwards (docs/api.md#deleting-a-workflow).
    // One that cannot be removed is logged and the others still are: the workflow is gone already.
    let erased = 0;
    for (const execution of executions) {
      try {
        await deps.artifacts?.eraseExecution(execution.execution_uuid);
        erased++;
      } catch (error) {
        logger.error({ executionId: execution.execution_uuid, err: String(error) }, 'could not remove the artifacts of a deleted execution');
      }
    }
    logger.info({ workflowId: id, executionsDeleted: executions.length, artifactsErased: deps.artifacts ? erased : null }, 'workflow deleted');
    return reply.code(204).send();
  });

  // The version's run cache (docs/run-cache.md): the next execution of it runs with the model again.
  app.delete('/api/workflows/:id/versions/:versionId/cache', {
    config: OPERATOR,
    schema: {
      summary: "Forget the version's run cache: its next execution runs with the model (and leaves a new cache)",
      params: pathParams('id', 'versionId'),
      response: { 200: answer('`cleared`: whether there was a cache.', cacheCleared), 404: notFoundAnswer, ...commonErrors },
    },
  }, async (request) => {
    const { id, versionId } = request.params;
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'id'], 'workflow');
    if (!(await store.listVersions(id)).some((v) => v.workflow_version_uuid === versionId)) throw notFound(['path', 'versionId'], 'version');
    const cleared = await queue.clearRunCache(versionId);
    logger.info({ workflowId: id, versionId, cleared }, 'run cache cleared');
    return { cleared };
  });

  // The version's run cache as an operator or auditor reads it (docs/api.md#run-cache).
  app.get('/api/workflows/:id/versions/:versionId/cache', {
    config: OPERATOR,
    schema: {
      summary: "Read the version's run cache: each cached step and action, its element, where each value comes from, its effect, and what the last repair changed",
      params: pathParams('id', 'versionId'),
      response: { 200: answer('The cached run.', runCacheView), 404: notFoundAnswer, ...commonErrors },
    },
  }, async (request) => {
    const { id, versionId } = request.params;
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'id'], 'workflow');
    if (!(await store.listVersions(id)).some((v) => v.workflow_version_uuid === versionId)) throw notFound(['path', 'versionId'], 'version');
    const view = presentRunCache(await queue.readRunCache(versionId));
    if (!view) throw notFound(['path', 'versionId'], 'run cache');
    return view;
  });

  app.get('/api/workflows/:workflow_uuid/versions', {
    // The worker reads it too (the version it runs, docs/api.md#every-call).
    config: WORKER_READ,
    schema: {
      summary: 'List the versions of a workflow (ascending version number; the highest is current)',
      params: pathParams('workflow_uuid'),
      response: { 200: answer('Every version.', versionList), 404: notFoundAnswer, ...commonErrors },
    },
  }, async (request) => {
    const { workflow_uuid: id } = request.params;
    if (!(await store.getWorkflow(id))) throw notFound(['path', 'workflow_uuid'], 'workflow');
    const items = await presentVersions(deps, id, await store.listVersions(id));
    return { items, total: items.length };
  });

  app.post(EXECUTE_ROUTE, {
    config: OPERATOR,
    // No body is `{}`; `input_payload` is read as `inputPayload`.
    preValidation: async (request) => {
      await optionalBody(request);
      if (isPlainObject(request.body)) request.body = camelCaseFields(oneSpelling(request.body, EXECUTE_ALIASES), EXECUTE_ALIASES);
    },
    schema: {
      summary: 'Execute a version (by default the newest published one): validates inputPayload, creates a queued execution and enqueues its job',
      description:
        "`workflowVersionId` names the version to run, a draft included; without it the newest published version runs (the one whose `runs_by_default` is true), and a workflow with no published version answers 422 (`type: version_draft`). A version of another workflow answers 404 at `body.workflowVersionId`. Without inputPayload the version's default input (`configuration.inputPayload`) is used.",
      params: pathParams('workflowId'),
      body: executeRequest,
      response: {
        201: answer('The queued execution.', execution),
        404: notFoundAnswer,
        503: unavailableAnswer('The queue could not be reached; the execution is recorded as failed.'),
        ...commonErrors,
      },
    },
  }, async (request, reply) => {
    const { params: { workflowId: id }, body } = request;
    // The execution's trace starts here, continuing the caller's when it sent one (docs/operations.md#traces).
    return inServerSpan(tracing, request, reply, EXECUTE_ROUTE, { 'workflow.id': id }, async (span) => {
      const workflow = await store.getWorkflow(id);
      if (!workflow) throw notFound(['path', 'workflowId'], 'workflow');
      const version = await chosenVersion(store, workflow, body.workflowVersionId);
      // Without inputPayload the version's default input is used (null when it has none), its secrets too.
      const input = Object.hasOwn(body, 'inputPayload') ? { payload: body.inputPayload, secretPaths: [] } : defaultRunInput(version, deps.inputKeys);
      const traceparent = span.traceparent;
      const execution = await createExecution(deps, { workflow, version, inputPayload: input.payload, secretPaths: input.secretPaths, trigger: 'manual', ...(traceparent ? { traceparent } : {}) });
      span.setAttributes({ 'execution.id': execution.execution_uuid, 'workflow_version.id': execution.workflow_version_uuid });
      return reply.code(201).send(execution);
    });
  });
}

/**
 * The version an execute call runs: the one it names (of this workflow, a draft included), else
 * the newest published one (docs/api.md#versions).
 */
async function chosenVersion(store: Store, workflow: WorkflowRow, versionId: string | undefined): Promise<VersionView> {
  const versions = await store.listVersions(workflow.workflow_uuid);
  if (versionId !== undefined) {
    const named = versions.find((v) => v.workflow_version_uuid === versionId);
    if (!named) throw notFound(['body', 'workflowVersionId'], 'version of this workflow');
    return named;
  }
  const runs = versions.find((v) => v.runs_by_default);
  if (runs) return runs;
  const newest = versions.find((v) => v.is_current);
  throw unprocessable([
    {
      loc: ['path', 'workflowId'],
      msg: `no version of this workflow is published${newest ? ` (version ${newest.version} is a draft)` : ''}: publish one (POST /api/workflows/${workflow.workflow_uuid}/versions/{versionId}/publish), or name the version to run in workflowVersionId`,
      type: 'version_draft',
    },
  ]);
}

/** The specification fields of a create body, as the version stores them. */
function pickSpecification(body: Specification): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  for (const field of SPECIFICATION_FIELDS) {
    if (body[field] !== undefined) spec[field] = body[field];
  }
  return spec;
}

function defaultName(prompt: string): string {
  const line = prompt.trim().split('\n')[0] ?? 'Workflow';
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
