import type { Job } from 'bullmq';
import { readableExecutionId } from '../domain/job.js';
import type { Logger } from '../telemetry/types.js';
import type { EndedExecutions } from './ended-executions.js';
import { forgetJobSecrets } from './job-secrets.js';

/**
 * Executions whose worker died mid-run (docs/queue-and-jobs.md#lost-executions). The worker allows
 * no stalled restart (`maxStalledCount` 0), so BullMQ's stalled check counts the job's stall
 * (`stalledCounter`) and marks it to fail when next taken (`deferredFailure`); the worker that
 * takes it fails it without running it, and reports the execution lost.
 */

/** The job failed because its worker stopped renewing its lock: read from the job's own fields, never from a message. */
export function isLostJob(job: Pick<Job, 'stalledCounter' | 'deferredFailure'>): boolean {
  return job.stalledCounter > 0 && typeof job.deferredFailure === 'string' && job.deferredFailure !== '';
}

/**
 * Reports a lost job's execution once: ended (so a job delivered again is not run), its input
 * dropped from the job, then `onLost`. Jobs without a readable execution id have nobody to tell.
 */
export function createLostJobReporter(options: { ended: EndedExecutions; logger: Logger; onLost(executionId: string, data: unknown): Promise<void> }) {
  const { ended, logger } = options;
  return async (job: Job): Promise<void> => {
    const executionId = readableExecutionId(job.data);
    if (!executionId) return;
    logger.error({ executionId, jobId: job.id }, 'execution lost: its worker stopped mid-run');
    try {
      await ended.remember(executionId, 'lost');
      await forgetJobSecrets(job, undefined, logger);
      await options.onLost(executionId, job.data);
    } catch (error) {
      logger.error({ executionId, err: String(error) }, 'could not report a lost execution');
    }
  };
}
