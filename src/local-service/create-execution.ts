import { randomUUID } from 'node:crypto';
import { isPrefix, type KeyPath } from '../contract/key-path.js';
import type { ProfileKeyring } from '../domain/profile-crypto.js';
import { withShownFileUrls } from '../domain/input-files.js';
import { createSecretVault } from '../domain/secrets.js';
import type { Logger, Tracing } from '../telemetry/types.js';
import { markSecrets } from './default-input.js';
import { HttpError } from './http-errors.js';
import type { JobQueue } from './job-queue.js';
import type { ExecutionRow } from '../contract/executions.js';
import type { JsonSchema } from '../contract/json.js';
import type { VersionRow, WorkflowRow } from '../contract/workflows.js';
import type { Store } from './store.js';
import { validateInputPayload } from './validation.js';

/**
 * The one way an execution comes to be, for `POST /api/workflows/{id}/execute` and for a
 * schedule's tick alike: the caller chose the version (docs/api.md#versions), the input must pass its payload schema;
 * the execution is stored `queued` and its job enqueued (a queue that cannot be reached fails
 * it at once and answers 503).
 */

export interface CreateExecutionDeps {
  store: Store;
  queue: JobQueue;
  logger: Logger;
  /** Where the service's spans go (docs/operations.md#traces); absent: nowhere. */
  tracing?: Tracing;
  /** PROFILE_KEYS: open the sealed secrets of versions' default inputs (default-input.ts). */
  inputKeys?: ProfileKeyring;
}

export interface CreateExecutionInput {
  workflow: WorkflowRow;
  version: VersionRow;
  inputPayload: unknown;
  trigger: ExecutionRow['trigger'];
  /** Given by a schedule's tick, so that a tick processed twice makes one execution. */
  executionId?: string;
  /** Where the input has secrets besides what the schema marks: a default input's (default-input.ts). */
  secretPaths?: readonly KeyPath[];
  /** The span of the request or the tick that makes the execution, carried by the job. */
  traceparent?: string;
}

export async function createExecution(deps: CreateExecutionDeps, input: CreateExecutionInput): Promise<ExecutionRow> {
  const { store, queue, logger } = deps;
  const { workflow, version, inputPayload } = input;
  const schemaMarks = await validateInputPayload(version.specification.payloadSchema, inputPayload);
  // A default input's secrets that the schema no longer marks stay secret: the job's
  // specification marks them too (an annotation: it accepts what it accepted), so the run keeps them.
  const unmarked = (input.secretPaths ?? []).filter((path) => !schemaMarks.some((mark) => isPrefix(mark.path, path)));
  const specification = markSecrets(version.specification, unmarked);
  const schema = specification.payloadSchema as JsonSchema | undefined;
  const marks = [...schemaMarks, ...unmarked.map((path) => ({ path, totp: false }))];

  const now = new Date().toISOString();
  const execution: ExecutionRow = {
    execution_uuid: input.executionId ?? randomUUID(),
    workflow_version_uuid: version.workflow_version_uuid,
    workflow_uuid: workflow.workflow_uuid,
    workflow_name: workflow.name,
    version: version.version,
    created_at: now,
    updated_at: now,
    status: 'queued',
    trigger: input.trigger,
    // Secret fields (writeOnly / x-secret) are never stored or shown: only the queued job
    // carries their values, for the worker to type. Input files' URLs are stored without
    // their query (pre-signed signatures) and credentials.
    input_payload: withShownFileUrls(createSecretVault(inputPayload, schema, [], { marks }).maskedPayload, schema),
    duration_ms: null,
    n_steps: 0,
    n_agent_actions: 0,
    n_screenshots: 0,
    output_url: null,
    video_url: null,
    logs_url: null,
    started_at: null,
    completed_at: null,
    failed_at: null,
    error: null,
  };
  await store.createExecution(execution);
  try {
    await queue.add({
      executionId: execution.execution_uuid,
      workflowId: workflow.workflow_uuid,
      workflowVersionId: version.workflow_version_uuid,
      inputPayload,
      specification,
      ...(input.traceparent ? { traceparent: input.traceparent } : {}),
    });
  } catch (error) {
    const message = `could not enqueue the execution: ${error instanceof Error ? error.message : String(error)}`;
    logger.error({ executionId: execution.execution_uuid, err: message }, 'enqueue failed');
    await store.transition(execution.execution_uuid, {
      from: ['queued'],
      to: 'failed',
      fields: { failed_at: new Date().toISOString(), error: { code: 'internal', message } },
    });
    throw new HttpError(503, [{ loc: [], msg: message, type: 'queue_unavailable' }]);
  }
  logger.info({ executionId: execution.execution_uuid, workflowId: workflow.workflow_uuid, trigger: input.trigger }, 'execution queued');
  return execution;
}
