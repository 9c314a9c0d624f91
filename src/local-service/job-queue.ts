import { Queue, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobData } from '../contract/job.js';
import { redisOptions } from '../domain/redis-address.js';
import { runCacheKey } from '../domain/run-cache.js';
import type { Logger } from '../telemetry/types.js';

/**
 * The producer side of docs/queue-and-jobs.md: one BullMQ job per execution, `jobId` = the execution's
 * uuid, so a double submit cannot enqueue the same execution twice.
 */

export interface JobQueue {
  /**
   * Enqueues an execution's job: the API gives every field (the worker would otherwise fetch what
   * is missing), and the `traceparent` of the span that made it when it traces.
   */
  add(data: Required<Omit<JobData, 'traceparent'>> & Pick<JobData, 'traceparent'>): Promise<void>;
  /**
   * The execution is deleted: a job still waiting, or ended, is removed; a job a worker runs
   * keeps `maskedInput` (the input with secrets as placeholders) in place of its input.
   */
  forget(executionId: string, maskedInput: unknown): Promise<void>;
  /** Forgets a version's run cache (docs/run-cache.md), kept beside the queue; false when there was none. */
  clearRunCache(versionId: string): Promise<boolean>;
  /** The version's run cache entry as stored (JSON), or undefined when it has none. */
  readRunCache(versionId: string): Promise<unknown>;
  close(): Promise<void>;
}

/** Job name; the worker accepts any. */
const JOB_NAME = 'execute';

export function createJobQueue(opts: { redisUrl: string; queueName: string; queuePrefix: string; logger: Logger }): JobQueue {
  const queue = new Queue<JobData>(opts.queueName, {
    // ioredis's and BullMQ's option types differ in detail; the object is ioredis's own.
    connection: redisOptions(opts.redisUrl) as ConnectionOptions,
    prefix: opts.queuePrefix,
  });
  // Connection trouble is reported by the failing `add`; an unheard 'error' event would crash the process.
  queue.on('error', (error: Error) => opts.logger.warn({ err: error }, 'queue connection error'));
  let closing: Promise<void> | undefined;
  // Run caches sit beside the queue; one plain connection, opened the first time one is cleared.
  let plain: Redis | undefined;
  const redis = (): Redis => {
    if (plain) return plain;
    plain = new Redis(redisOptions(opts.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 }));
    // Heard once, when the connection is made (not on every clear).
    plain.on('error', (error: Error) => opts.logger.warn({ err: error }, 'redis connection error'));
    return plain;
  };

  return {
    async add(data) {
      await queue.add(JOB_NAME, data, {
        jobId: data.executionId,
        // The execution's status is the record of its outcome: BullMQ must not run it again.
        attempts: 1,
        // Keep finished jobs a while for inspection, bounded so Redis does not grow forever.
        removeOnComplete: { age: 86_400, count: 1_000 },
        removeOnFail: { age: 7 * 86_400, count: 5_000 },
      });
    },

    async forget(executionId, maskedInput) {
      const job = await queue.getJob(executionId);
      if (!job) return;
      const state = await job.getState();
      if (state === 'active') await job.updateData({ ...job.data, inputPayload: maskedInput });
      else await job.remove();
    },

    async clearRunCache(versionId) {
      return (await redis().del(runCacheKey(opts.queuePrefix, opts.queueName, versionId))) > 0;
    },

    async readRunCache(versionId) {
      const raw = await redis().get(runCacheKey(opts.queuePrefix, opts.queueName, versionId));
      if (raw === null) return undefined;
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        return null;
      }
    },

    close() {
      closing ??= Promise.all([queue.close(), plain?.quit().catch(() => plain?.disconnect())]).then(() => undefined);
      return closing;
    },
  };
}
