import { randomUUID } from 'node:crypto';
import { Job, Queue, QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createBullmqIntake } from '../../src/intake/bullmq-intake.js';
import type { Intake } from '../../src/intake/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * A job's input holds real secrets and one-time-code seeds, and BullMQ keeps an ended job for
 * days: once the run has ended the worker replaces the input with its masked copy (or drops it),
 * on a real Redis. The execution id, which tells a job delivered again, stays.
 */

const SCHEMA = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true }, otp: { type: 'string', format: 'totp' } } };
const INPUT = { user: 'ann', password: 'job-Pa55word-kept?', otp: 'JBSWY3DPEHPK3PXP' };

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

async function runOne(handle: Parameters<typeof createBullmqIntake>[0]['handle']): Promise<{ data: Record<string, unknown>; returnvalue: unknown }> {
  const queueName = `secrets-${randomUUID().slice(0, 8)}`;
  const queue = new Queue(queueName, { connection: { url: redis.url } });
  const events = new QueueEvents(queueName, { connection: { url: redis.url } });
  const intake: Intake = createBullmqIntake({ redisUrl: redis.url, queueName, prefix: 'bull', concurrency: 1, logger: createSilentLogger(), handle, onLost: async () => undefined });
  try {
    await events.waitUntilReady();
    const executionId = randomUUID();
    const job = await queue.add('execute', { executionId, inputPayload: INPUT, specification: { prompt: 'p', allowedDomains: ['shop.test'], payloadSchema: SCHEMA } }, { jobId: executionId });
    await intake.start();
    await job.waitUntilFinished(events, 60_000);
    const stored = await Job.fromId(queue, executionId);
    return { data: stored!.data as Record<string, unknown>, returnvalue: stored!.returnvalue };
  } finally {
    await intake.close();
    await Promise.allSettled([events.close(), queue.obliterate({ force: true }).finally(() => queue.close())]);
  }
}

describe("secrets in an ended job's data", () => {
  it('are replaced by their placeholders once the run has ended', async () => {
    const { data, returnvalue } = await runOne(async (jobData) => {
      const { inputPayload } = jobData as { inputPayload: unknown };
      return { status: 'completed', maskedInput: createSecretVault(inputPayload, SCHEMA).maskedPayload };
    });
    expect(data.inputPayload).toEqual({ user: 'ann', password: '{{password}}', otp: '{{otp}}' });
    expect(typeof data.executionId).toBe('string');
    expect(JSON.stringify(data)).not.toContain('Pa55word');
    expect(JSON.stringify(data)).not.toContain('JBSWY3DP');
    expect(returnvalue).toEqual({ status: 'completed' });
  });

  it('are dropped with the whole input when the run never accepted it', async () => {
    const { data } = await runOne(async () => ({ status: 'failed', code: 'invalid_input' }));
    expect(data).not.toHaveProperty('inputPayload');
    expect(data.specification).toMatchObject({ prompt: 'p' });
  });
});
