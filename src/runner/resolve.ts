import type { ControlPlane } from '../control-plane/types.js';
import { ExecutionError, isExecutionError } from '../contract/errors.js';
import type { JobData } from '../contract/job.js';

/** The specification and input of one execution: from the job, else from the API (docs/api.md). */
export interface ResolvedJob {
  rawSpecification: unknown;
  inputPayload: unknown;
  workflowId?: string;
  workflowVersionId?: string;
}

export async function resolveJob(job: JobData, controlPlane: ControlPlane | undefined, signal: AbortSignal): Promise<ResolvedJob> {
  const hasInput = job.inputPayload !== undefined;
  if (job.specification !== undefined && hasInput) {
    return { rawSpecification: job.specification, inputPayload: job.inputPayload, ...ids(job.workflowId, job.workflowVersionId) };
  }
  if (!controlPlane) {
    if (job.specification !== undefined) return { rawSpecification: job.specification, inputPayload: null };
    throw new ExecutionError('invalid_job', 'the job carries no specification and no API is configured to fetch it');
  }
  const execution = await apiCall('fetch the execution', () => controlPlane.getExecution(job.executionId, signal));
  const inputPayload = hasInput ? job.inputPayload : (execution.input_payload ?? null);
  if (job.specification !== undefined) {
    return { rawSpecification: job.specification, inputPayload, ...ids(job.workflowId, job.workflowVersionId) };
  }
  const workflowId = job.workflowId ?? execution.workflow_uuid ?? undefined;
  const versionId = job.workflowVersionId ?? execution.workflow_version_uuid ?? undefined;
  if (!workflowId || !versionId) {
    throw new ExecutionError('invalid_job', 'cannot find the specification: neither the job nor the execution names its workflow and version');
  }
  const versions = await apiCall('list the workflow versions', () => controlPlane.listVersions(workflowId, signal));
  const version = versions.find((v) => v.workflow_version_uuid === versionId);
  if (!version) {
    throw new ExecutionError('invalid_job', `version ${versionId} is not among the versions of workflow ${workflowId}`);
  }
  return { rawSpecification: version.specification, inputPayload, workflowId, workflowVersionId: versionId };
}

function ids(workflowId?: string, workflowVersionId?: string): Pick<ResolvedJob, 'workflowId' | 'workflowVersionId'> {
  return { ...(workflowId ? { workflowId } : {}), ...(workflowVersionId ? { workflowVersionId } : {}) };
}

async function apiCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (isExecutionError(error)) throw error;
    throw new ExecutionError('internal', `could not ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
