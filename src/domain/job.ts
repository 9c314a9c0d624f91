import { formatIssues } from '../contract/json.js';
import { jobData, type JobData } from '../contract/job.js';
import { ExecutionError } from '../contract/errors.js';
import { formatTraceParent, parseTraceParent } from './trace-context.js';

/**
 * Validates job data (docs/queue-and-jobs.md#job-data); throws `invalid_job` with every fault
 * named. A `traceparent` that does not read as one is dropped: the execution starts a trace of its
 * own, as W3C Trace Context says of a header it cannot read.
 */
export function parseJobData(raw: unknown): JobData {
  const parsed = jobData.safeParse(raw);
  if (!parsed.success) throw new ExecutionError('invalid_job', `invalid job data: ${formatIssues(parsed.error.issues)}`);
  const { traceparent, ...data } = parsed.data;
  // Kept as read, version 00: a later version's extra fields do not travel on.
  const read = traceparent !== undefined && traceparent.length <= 4096 ? parseTraceParent(traceparent) : undefined;
  return read ? { ...data, traceparent: formatTraceParent(read) } : data;
}

/** The execution id of malformed job data, when it can still be read (to report the failure). */
export function readableExecutionId(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== 'object' || !Object.hasOwn(raw, 'executionId')) return undefined;
  const id = jobData.shape.executionId.safeParse((raw as { executionId: unknown }).executionId);
  return id.success ? id.data : undefined;
}
