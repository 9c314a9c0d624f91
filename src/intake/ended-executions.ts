import type { Redis } from 'ioredis';
import type { Logger } from '../telemetry/types.js';

/**
 * Which executions ended (docs/queue-and-jobs.md#re-delivery): runs act on real business systems
 * and are not idempotent, so a job delivered again for an execution that ended is not run again.
 * One key per execution, `{prefix}:{queue}:ended:{executionId}`, holding how it ended.
 */

export interface EndedExecutions {
  has(executionId: string): Promise<boolean>;
  /** Remembers `executionId` as ended with `status` (`completed`, `failed`, `lost`); a failure is logged. */
  remember(executionId: string, status: string): Promise<void>;
}

export function createEndedExecutions(options: { connection: Redis; prefix: string; queueName: string; ttlMs: number; logger: Logger }): EndedExecutions {
  const { connection, logger } = options;
  const key = (executionId: string) => `${options.prefix}:${options.queueName}:ended:${executionId}`;
  return {
    has: async (executionId) => (await connection.exists(key(executionId))) > 0,
    async remember(executionId, status) {
      try {
        await connection.set(key(executionId), status, 'PX', options.ttlMs);
      } catch (error) {
        logger.warn({ executionId, err: (error as Error).message }, 'could not remember the execution as ended');
      }
    },
  };
}
