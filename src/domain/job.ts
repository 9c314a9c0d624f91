import { z } from 'zod';
import { ExecutionError } from './errors.js';
import { formatIssues } from './specification.js';
import { parseTraceParent } from './trace-context.js';

/** The data of one queue job (docs/queue-and-jobs.md). */
export interface JobData {
  executionId: string;
  workflowId?: string;
  workflowVersionId?: string;
  /** `undefined` when the job does not carry it (then the API is asked). */
  inputPayload?: unknown;
  /** Raw specification; validated by `parseSpecification` later. */
  specification?: unknown;
  /**
   * A W3C `traceparent`: the execution's trace continues it (docs/queue-and-jobs.md#job-data). Kept
   * only when it reads as one; a malformed one is dropped, and the execution starts a trace of its
   * own, as W3C Trace Context says of a header it cannot read. Not a string: the job is malformed.
   */
  traceparent?: string;
}

const jobDataSchema = z.object({
  executionId: z.string().trim().min(1, 'must be a non-empty string').max(200),
  workflowId: z.string().min(1).optional(),
  workflowVersionId: z.string().min(1).optional(),
  inputPayload: z.unknown().optional(),
  specification: z.record(z.string(), z.unknown()).optional(),
  traceparent: z.string().max(512).optional(),
});

/** Validates job data; throws `invalid_job` with every fault named. */
export function parseJobData(raw: unknown): JobData {
  const parsed = jobDataSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ExecutionError('invalid_job', `invalid job data: ${formatIssues(parsed.error.issues)}`);
  }
  const data: JobData = { executionId: parsed.data.executionId };
  if (parsed.data.workflowId !== undefined) data.workflowId = parsed.data.workflowId;
  if (parsed.data.workflowVersionId !== undefined) data.workflowVersionId = parsed.data.workflowVersionId;
  if (raw !== null && typeof raw === 'object' && 'inputPayload' in raw) data.inputPayload = parsed.data.inputPayload;
  if (parsed.data.specification !== undefined) data.specification = parsed.data.specification;
  if (parsed.data.traceparent !== undefined && parseTraceParent(parsed.data.traceparent)) data.traceparent = parsed.data.traceparent.trim();
  return data;
}

/** The execution id of malformed job data, when it can still be read (to report the failure). */
export function readableExecutionId(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const id = (raw as Record<string, unknown>).executionId;
  return typeof id === 'string' && id.trim().length > 0 && id.length <= 200 ? id.trim() : undefined;
}
