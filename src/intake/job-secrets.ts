import type { Job } from 'bullmq';
import type { Logger } from '../telemetry/types.js';

/**
 * A job keeps no secret once its run has ended (docs/secrets.md#secrets-outside-the-worker):
 * BullMQ keeps finished jobs for days, so their input is replaced by its masked copy, or dropped.
 * The execution id, which tells a job delivered again, stays.
 */

/** `data` with its input replaced by `maskedInput` (dropped when undefined); undefined when it holds no input. */
export function withoutSecrets(data: unknown, maskedInput: unknown): Record<string, unknown> | undefined {
  if (data === null || typeof data !== 'object' || Array.isArray(data) || !Object.hasOwn(data, 'inputPayload')) return undefined;
  const { inputPayload: _real, ...rest } = data as Record<string, unknown>;
  return maskedInput === undefined ? rest : { ...rest, inputPayload: maskedInput };
}

/** Rewrites the job's data without its secrets; a failure is logged (the job keeps its input). */
export async function forgetJobSecrets(job: Job, maskedInput: unknown, logger: Logger): Promise<void> {
  const data = withoutSecrets(job.data, maskedInput);
  if (!data) return;
  try {
    await job.updateData(data);
  } catch (error) {
    logger.warn({ jobId: job.id, err: (error as Error).message }, "could not remove the secrets from the ended job's data");
  }
}
