/**
 * The data of one queue job (docs/queue-and-jobs.md#job-data): the local API's producer writes it
 * (local-service/job-queue.ts), the worker reads it (domain/job.ts).
 */
import { z } from 'zod';

export const jobData = z.object({
  /** The execution's uuid; also the job's id. */
  executionId: z.string().trim().min(1, 'must be a non-empty string').max(200),
  workflowId: z.string().min(1).optional(),
  workflowVersionId: z.string().min(1).optional(),
  /** Absent when the job does not carry it (then the worker asks the API); null is an input. */
  inputPayload: z.unknown().optional(),
  /** The version's specification as stored (checked by the worker when it prepares the run); absent: the worker fetches it. */
  specification: z.record(z.string(), z.unknown()).optional(),
  /**
   * A W3C `traceparent` (docs/operations.md#traces): the execution's trace continues it. The worker
   * ignores one that does not read as a `traceparent`, whatever its length (domain/job.ts); not a
   * string: the job is malformed.
   */
  traceparent: z.string().optional(),
});
export type JobData = z.infer<typeof jobData>;
