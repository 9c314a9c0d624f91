import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBullmqIntake } from '../../src/intake/bullmq-intake.js';
import { pingRedis } from '../../src/intake/redis-ping.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * The intake against BullMQ as it really is, on a real Redis: a job whose worker stopped
 * renewing its lock is failed by BullMQ's stalled check and reported lost once, from the job's
 * own fields (its stall count and deferred failure), never from the text of a message; should
 * BullMQ rename or drop those fields, this test fails. And the readiness ping: answered, or false
 * at once when Redis does not answer in time or the caller gives up.
 */

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => redis?.stop());

describe('a job whose worker stopped mid-run', () => {
  it('is reported lost once, remembered as ended, and its input leaves the job', async () => {
    const queueName = `lost-${randomUUID().slice(0, 8)}`;
    const queue = new Queue(queueName, { connection: { url: redis.url } });
    const executionId = randomUUID();
    // A worker that takes the job and then dies: it fetches by hand and never renews the lock.
    const dying = new Worker(queueName, null, { connection: { url: redis.url }, lockDuration: 1_000, autorun: false });
    const lost: Array<{ executionId: string; data: unknown }> = [];
    let reported!: () => void;
    const lostReported = new Promise<void>((resolve) => (reported = resolve));
    const handled: string[] = [];
    const intake = createBullmqIntake({
      redisUrl: redis.url,
      queueName,
      prefix: 'bull',
      concurrency: 1,
      lockDurationMs: 1_000,
      stalledIntervalMs: 500,
      logger: createSilentLogger(),
      handle: async (data) => {
        handled.push(String((data as { executionId: string }).executionId));
        return { status: 'completed' };
      },
      onLost: async (id, data) => {
        lost.push({ executionId: id, data });
        reported();
      },
    });
    const admin = new Redis(redis.url);
    try {
      await queue.add('execute', { executionId, inputPayload: { password: 'Pa55word' } }, { jobId: executionId });
      const taken = await dying.getNextJob(randomUUID());
      expect(taken?.id).toBe(executionId);
      await dying.disconnect();
      await intake.start();
      await lostReported;

      expect(lost.map((l) => l.executionId)).toEqual([executionId]);
      expect(handled).toEqual([]);
      const job = await queue.getJob(executionId);
      expect(await job!.getState()).toBe('failed');
      expect(job!.stalledCounter).toBeGreaterThan(0);
      expect(job!.data).toEqual({ executionId });
      expect(await admin.get(`bull:${queueName}:ended:${executionId}`)).toBe('lost');

      // Delivered again by a producer: not run, and not reported lost a second time.
      await job!.remove();
      await queue.add('execute', { executionId, inputPayload: {} }, { jobId: executionId });
      const again = await queue.getJob(executionId);
      await expect.poll(async () => again!.getState(), { timeout: 30_000 }).toBe('completed');
      expect((await queue.getJob(executionId))!.returnvalue).toEqual({ status: 'skipped', code: 'already_ended' });
      expect(handled).toEqual([]);
      expect(lost).toHaveLength(1);
    } finally {
      await intake.close();
      await dying.close();
      admin.disconnect();
      await queue.obliterate({ force: true }).finally(() => queue.close());
    }
  });

  it('is not taken for lost when it failed for another reason', async () => {
    const queueName = `notlost-${randomUUID().slice(0, 8)}`;
    const queue = new Queue(queueName, { connection: { url: redis.url } });
    let lostCalls = 0;
    const intake = createBullmqIntake({
      redisUrl: redis.url,
      queueName,
      prefix: 'bull',
      concurrency: 1,
      logger: createSilentLogger(),
      handle: async () => {
        throw new Error('invalid job data: no executionId');
      },
      onLost: async () => void lostCalls++,
    });
    try {
      await intake.start();
      const job = await queue.add('execute', { executionId: 'x' }, { jobId: 'x' });
      await expect.poll(async () => job.getState(), { timeout: 30_000 }).toBe('failed');
      expect((await queue.getJob('x'))!.failedReason).toBe('invalid job data: no executionId');
      expect(lostCalls).toBe(0);
    } finally {
      await intake.close();
      await queue.obliterate({ force: true }).finally(() => queue.close());
    }
  });
});

describe('the readiness ping', () => {
  it('answers true from a live Redis, false from one that does not answer, and false at once when given up', async () => {
    const connection = new Redis(redis.url);
    const admin = new Redis(redis.url);
    try {
      await connection.ping();
      expect(await pingRedis(connection, new AbortController().signal)).toBe(true);

      // Every client's commands are held (CLIENT PAUSE ALL, the pausing one's too) until the
      // pause ends, long after this test: the Redis of this file is stopped first.
      await admin.call('CLIENT', 'PAUSE', '120000', 'ALL');
      const gaveUp = new AbortController();
      const quick = pingRedis(connection, gaveUp.signal);
      gaveUp.abort();
      expect(await quick).toBe(false);
      expect(await pingRedis(connection, new AbortController().signal)).toBe(false);

      connection.disconnect();
      expect(await pingRedis(connection, new AbortController().signal)).toBe(false);
    } finally {
      connection.disconnect();
      admin.disconnect();
    }
  });
});
