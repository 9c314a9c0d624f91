import { Queue } from 'bullmq';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_INPUT, DEMO_WORKFLOW } from '../../demo/workflow.js';
import { execution as executionAnswer } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import type { LocalServer } from '../../src/local-service/server.js';
import { loadRecording } from '../../src/model/playback-client.js';
import { waitForJob } from '../support/queue-events.js';
import type { TestRedis } from '../support/redis.js';
import type { ShopServer } from '../support/shop-server.js';
import { startDaemonStack, type DaemonStack } from '../support/stack.js';

/**
 * The local API (`execution-worker serve`) and the worker together on one real Redis: a
 * workflow created and executed through the API ends `completed` with its counters and
 * artifact links, the artifacts served back by the API. The model is the demo's recording.
 */

const KEY = 'api-e2e-key';
let stack: DaemonStack<undefined>;
let redis: TestRedis;
let shop: ShopServer;
let dir: string;
let api: LocalServer;
let queueName: string;

beforeAll(async () => {
  stack = await startDaemonStack({ name: 'api-e2e', key: KEY, env: { VIDEO_FPS: '5' }, daemon: { recording: await loadRecording(path.resolve('demo/shop.recording.json')) } });
  ({ redis, shop, dir, api, queueName } = stack);
});

afterAll(async () => {
  await stack?.close();
});

describe('local API and worker together', () => {
  it('creates, executes and completes a workflow, with counters and playable artifacts', async () => {
    const created = await stack.call.as(workflow)('POST', '/api/workflows', DEMO_WORKFLOW(`${shop.origin}/`));
    expect(created.status).toBe(201);
    const workflowId = String(created.body.workflow_uuid);
    const executed = await stack.call.as(executionAnswer)('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: DEMO_INPUT });
    expect(executed.status).toBe(201);
    expect(executed.body.status).toBe('queued');
    const executionId = String(executed.body.execution_uuid);

    // The worker ends the job after its final report: wait for that event, then read the API.
    const queue = new Queue(queueName, { connection: { url: redis.url } });
    try {
      await waitForJob(queue, executionId, redis.url);
    } finally {
      await queue.close();
    }
    const execution = (await stack.call.as(executionAnswer)('GET', `/api/executions/${executionId}`)).body;
    expect(execution).toMatchObject({ status: 'completed', n_steps: 3, n_agent_actions: 6, n_screenshots: 1, workflow_uuid: workflowId });
    expect(execution.duration_ms).toBeGreaterThan(0);
    // The secret input field is never stored or shown by the API; the worker still typed it.
    expect(execution.input_payload).toEqual({ ...DEMO_INPUT, password: '{{password}}' });
    expect(shop.forms).toContainEqual({ path: '/login', fields: { user: DEMO_INPUT.user, password: DEMO_INPUT.password } });
    expect(shop.forms).toContainEqual({ path: '/order', fields: { reference: DEMO_INPUT.reference, quantity: '1' } });
    for (const field of ['video_url', 'logs_url', 'output_url'] as const) {
      const url = String(execution[field]);
      expect(url.startsWith(`${api.url}/artifacts/executions/${executionId}/`)).toBe(true);
      const res = await fetch(url, { headers: { 'x-service-key': KEY } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const output = await (await fetch(String(execution.output_url), { headers: { 'x-service-key': KEY } })).json();
    expect(output).toMatchObject({ status: 'completed', output: { orderId: 'A-1001' } });
    expect(existsSync(path.join(dir, 'artifacts', 'executions', executionId, 'steps.vtt'))).toBe(true);
  });
});
