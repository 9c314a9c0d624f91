import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCacheKey } from '../../src/domain/run-cache.js';
import { createRedisRunCache, type RedisRunCache } from '../../src/storage/redis-run-cache.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * The run cache's store on a real Redis, read under the run's signal: a run that has stopped
 * reads nothing, a read Redis does not answer (its clients paused) ends when the run stops or
 * after the store's read timeout, and every read is a use that keeps the entry.
 */

const PREFIX = 'bull';
let redis: TestRedis;
let admin: Redis;
let cache: RedisRunCache;
let queue: string;

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  queue = `store-${randomUUID().slice(0, 8)}`;
  cache = createRedisRunCache({ redisUrl: redis.url, prefix: PREFIX, queue, ttlMs: 60_000, readTimeoutMs: 500, logger: createSilentLogger() });
});
afterAll(async () => {
  await cache?.close();
  admin?.disconnect();
  await redis?.stop();
});

/**
 * Holds every write until `release` (Redis's CLIENT PAUSE WRITE): the store's read is a GETEX,
 * which writes the TTL, so it waits; the test's own CLIENT UNPAUSE does not.
 */
async function pauseWrites(): Promise<{ release(): Promise<void> }> {
  await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
  return { release: async () => void (await admin.call('CLIENT', 'UNPAUSE')) };
}

describe('the run cache store on Redis', () => {
  it('reads an entry and keeps it for the TTL from that read', async () => {
    const versionId = randomUUID();
    await cache.put(versionId, { steps: [1, 2] });
    await admin.pexpire(runCacheKey(PREFIX, queue, versionId), 5_000);
    expect(await cache.get(versionId, new AbortController().signal)).toEqual({ steps: [1, 2] });
    expect(await admin.pttl(runCacheKey(PREFIX, queue, versionId))).toBeGreaterThan(5_000);
    expect(await cache.get(randomUUID(), new AbortController().signal)).toBeUndefined();
  });

  it('reads nothing for a run that has already stopped: it rejects with the run’s reason and the entry is not touched', async () => {
    const versionId = randomUUID();
    await cache.put(versionId, { steps: [] });
    await admin.pexpire(runCacheKey(PREFIX, queue, versionId), 5_000);
    const controller = new AbortController();
    const reason = new Error('the run was stopped');
    controller.abort(reason);
    await expect(cache.get(versionId, controller.signal)).rejects.toBe(reason);
    // No GETEX reached Redis: the TTL was not renewed.
    expect(await admin.pttl(runCacheKey(PREFIX, queue, versionId))).toBeLessThanOrEqual(5_000);
  });

  it('ends a read Redis does not answer when the run stops, with the run’s reason', async () => {
    const pause = await pauseWrites();
    try {
      const controller = new AbortController();
      const read = cache.get(randomUUID(), controller.signal);
      const reason = new Error('deadline');
      controller.abort(reason);
      await expect(read).rejects.toBe(reason);
    } finally {
      await pause.release();
    }
  });

  it('gives a read Redis does not answer up after its timeout, as an error the run takes for a miss', async () => {
    const pause = await pauseWrites();
    try {
      await expect(cache.get(randomUUID(), new AbortController().signal)).rejects.toThrow('no answer from Redis within 500 ms');
    } finally {
      await pause.release();
    }
  });
});
