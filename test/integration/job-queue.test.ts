import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCacheKey } from '../../src/domain/run-cache.js';
import { createJobQueue, type JobQueue } from '../../src/local-service/job-queue.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/** The local service's producer side against a real Redis: clearing run caches. */

const QUEUE = 'job-queue-test';
const PREFIX = 'bull';

let redis: TestRedis;
let client: Redis;
let jobs: JobQueue;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
  jobs = createJobQueue({ redisUrl: redis.url, queueName: QUEUE, queuePrefix: PREFIX, logger: createSilentLogger() });
});

afterAll(async () => {
  await jobs?.close();
  await client?.quit();
  await redis?.stop();
});

describe('clearRunCache', () => {
  it('removes a version run cache, says whether there was one, and adds no listener per call', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // More clears than an emitter's default listener limit (10), each with a cache to remove.
      for (let i = 0; i < 15; i++) {
        await client.set(runCacheKey(PREFIX, QUEUE, `v${i}`), '{}');
        expect(await jobs.clearRunCache(`v${i}`)).toBe(true);
        expect(await client.exists(runCacheKey(PREFIX, QUEUE, `v${i}`))).toBe(0);
      }
      expect(await jobs.clearRunCache('v0')).toBe(false);
      // A warning is emitted on the next tick: let it come before looking.
      await new Promise<void>((resolve) => process.nextTick(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
