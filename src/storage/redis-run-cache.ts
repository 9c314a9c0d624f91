/**
 * The run cache's store on the queue's Redis (docs/run-cache.md): one key per workflow version,
 * `{QUEUE_PREFIX}:{EXECUTION_QUEUE}:run-cache:{versionId}`, JSON, kept RUN_CACHE_TTL_MS after it
 * was last written or read (a version replayed every day never expires). Every worker of the fleet reads and writes the same keys; the last completed
 * run of a version wins. A Redis that does not answer is a miss, never a failed execution.
 */
import { Redis } from 'ioredis';
import { redisOptions } from '../domain/redis-address.js';
import { runCacheKey } from '../domain/run-cache.js';
import type { Logger } from '../telemetry/types.js';

export interface RedisRunCache {
  get(versionId: string, signal: AbortSignal): Promise<unknown | undefined>;
  put(versionId: string, entry: unknown): Promise<void>;
  delete(versionId: string): Promise<boolean>;
  close(): Promise<void>;
}

/** A read that takes longer than this is given up: the run goes on with the model. */
const READ_TIMEOUT_MS = 3_000;

export { runCacheKey };

export function createRedisRunCache(options: { redisUrl: string; prefix: string; queue: string; ttlMs: number; logger: Logger }): RedisRunCache {
  const redis = new Redis(redisOptions(options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: true }));
  redis.on('error', (error: Error) => options.logger.debug({ err: error.message }, 'run cache redis error'));
  const key = (versionId: string) => runCacheKey(options.prefix, options.queue, versionId);
  let closing: Promise<void> | undefined;
  return {
    async get(versionId, signal) {
      // A read is a use: the entry is kept RUN_CACHE_TTL_MS from its last use, not its last write.
      const read = redis.getex(key(versionId), 'PX', options.ttlMs);
      const text = await new Promise<string | null>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer from Redis within ${READ_TIMEOUT_MS} ms`)), READ_TIMEOUT_MS);
        const onAbort = () => {
          clearTimeout(timer);
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        read.then(
          (value) => {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            resolve(value);
          },
          (error: unknown) => {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            reject(error);
          },
        );
      });
      if (text === null) return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    },
    async put(versionId, entry) {
      await redis.set(key(versionId), JSON.stringify(entry), 'PX', options.ttlMs);
    },
    async delete(versionId) {
      return (await redis.del(key(versionId))) > 0;
    },
    close() {
      closing ??= redis.quit().then(
        () => undefined,
        () => redis.disconnect(),
      );
      return closing;
    },
  };
}
