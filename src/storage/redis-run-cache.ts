/**
 * The run cache's store on the queue's Redis (docs/run-cache.md): one key per workflow version,
 * `{QUEUE_PREFIX}:{EXECUTION_QUEUE}:run-cache:{versionId}`, JSON, kept RUN_CACHE_TTL_MS after it
 * was last written or read (a version replayed every day never expires). Every worker of the
 * fleet reads and writes the same keys; the last completed run of a version wins. A Redis that
 * does not answer is a miss, never a failed execution.
 */
import { Redis } from 'ioredis';
import { cancellable } from '../domain/cancel.js';
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

export interface RedisRunCacheOptions {
  redisUrl: string;
  prefix: string;
  queue: string;
  ttlMs: number;
  logger: Logger;
  /** How long a read may wait for Redis (default 3 s). */
  readTimeoutMs?: number;
}

export function createRedisRunCache(options: RedisRunCacheOptions): RedisRunCache {
  const readTimeoutMs = options.readTimeoutMs ?? READ_TIMEOUT_MS;
  const redis = new Redis(redisOptions(options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: true }));
  redis.on('error', (error: Error) => options.logger.debug({ err: error.message }, 'run cache redis error'));
  const key = (versionId: string) => runCacheKey(options.prefix, options.queue, versionId);
  let closing: Promise<void> | undefined;
  return {
    async get(versionId, signal) {
      // Bounded as well as cancelled: a Redis that does not answer is a miss, not a stalled run.
      const within = AbortSignal.any([signal, AbortSignal.timeout(readTimeoutMs)]);
      let text: string | null;
      try {
        // A read is a use: the entry is kept RUN_CACHE_TTL_MS from its last use, not its last write.
        // ioredis cannot take a command back: one given up on waits for its answer, then drops it.
        text = await cancellable(within, () => redis.getex(key(versionId), 'PX', options.ttlMs));
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (within.aborted) throw new Error(`no answer from Redis within ${readTimeoutMs} ms`);
        throw error;
      }
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
