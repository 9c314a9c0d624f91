import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBullmqIntake } from '../../src/intake/bullmq-intake.js';
import type { Logger } from '../../src/telemetry/types.js';
import { deferred } from '../support/deferred.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * The intake's hand-back: a job BullMQ fetched while the worker still had room, processed after
 * the room was gone, goes back to the wait list untouched and runs once room is back. The
 * periodic re-check is off, so BullMQ's fetch is in flight when the room goes (no timing).
 */

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => redis?.stop());

/** A logger that calls `onLine` with each message. */
function recordingLogger(onLine: (msg: string) => void): Logger {
  const logger: Logger = {
    debug: () => undefined,
    info: (_obj, msg) => onLine(msg ?? ''),
    warn: (_obj, msg) => onLine(msg ?? ''),
    error: (_obj, msg) => onLine(msg ?? ''),
    child: () => logger,
  };
  return logger;
}

describe('admission in the intake', () => {
  it('hands a job fetched without room back to the queue, and runs it when room is back', async () => {
    const queueName = `admission-${randomUUID().slice(0, 8)}`;
    const queue = new Queue(queueName, { connection: { url: redis.url } });
    const handedBack = deferred();
    let room = true;
    const handled: string[] = [];
    const firstStarted = deferred();
    const releaseFirst = deferred();
    const secondDone = deferred();
    const intake = createBullmqIntake({
      redisUrl: redis.url,
      queueName,
      prefix: 'bull',
      concurrency: 2,
      logger: recordingLogger((msg) => msg === 'no room for another execution: handed back to the queue' && handedBack.resolve()),
      admission: { hasRoom: (active) => active === 0 || room },
      roomRecheckMs: 3_600_000,
      handle: async (data) => {
        const id = (data as { executionId: string }).executionId;
        handled.push(id);
        if (id === 'first') {
          firstStarted.resolve();
          await releaseFirst.promise;
        } else secondDone.resolve();
        return { status: 'completed' };
      },
      onLost: async () => undefined,
    });
    try {
      await intake.start();
      await queue.add('execute', { executionId: 'first' }, { jobId: 'first' });
      await firstStarted.promise;
      room = false;
      await queue.add('execute', { executionId: 'second' }, { jobId: 'second' });
      // BullMQ's fetch was in flight: it takes the job, the intake hands it back.
      await handedBack.promise;
      expect(await (await queue.getJob('second'))!.getState()).toBe('waiting');
      expect(handled).toEqual(['first']);

      room = true;
      releaseFirst.resolve();
      await secondDone.promise;
      expect(handled).toEqual(['first', 'second']);
    } finally {
      await intake.close();
      await queue.close();
    }
  });
});
