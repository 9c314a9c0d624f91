import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './local-api-harness.js';

/** Deleting a workflow takes its executions' secrets out of Redis: their jobs, ended or waiting, on a real Redis. */

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('DELETE /api/workflows/{id} and the queued jobs', () => {
  it('removes the jobs of the workflow, ended and waiting, so no secret stays in Redis', async () => {
    const created = await h.call('POST', '/api/workflows', {
      name: 'Sign in',
      prompt: 'Sign in',
      allowedDomains: ['shop.test'],
      payloadSchema: { type: 'object', properties: { password: { type: 'string', writeOnly: true } } },
    });
    const workflowId = created.body.workflow_uuid as string;
    const execute = async () => (await h.call('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: { password: 'queued-Pa55word' } })).body.execution_uuid as string;

    const ended = await execute();
    // A worker takes it and ends it: BullMQ keeps the completed job, real input included.
    const done = new Promise<void>((resolve) => {
      const worker = new Worker(h.queueName, async () => ({ status: 'completed' }), { connection: { url: h.redis.url }, prefix: 'bull', autorun: true });
      worker.on('completed', () => void worker.close().then(resolve));
    });
    await done;
    expect((await h.queue.getJob(ended))?.data.inputPayload).toEqual({ password: 'queued-Pa55word' });
    const waiting = await execute();
    expect(await h.queue.getJob(waiting)).toBeDefined();

    expect((await h.call('DELETE', `/api/workflows/${workflowId}`)).status).toBe(204);
    expect(await h.queue.getJob(ended)).toBeUndefined();
    expect(await h.queue.getJob(waiting)).toBeUndefined();
  });
});
