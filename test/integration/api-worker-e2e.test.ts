import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_INPUT, DEMO_WORKFLOW } from '../../demo/workflow.js';
import { loadConfig } from '../../src/config/schema.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { loadRecording } from '../../src/model/playback-client.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { hostRules, tempDir } from '../support/env.js';
import { waitForJob } from '../support/queue-events.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * The local API (`execution-worker serve`) and the worker together on one real Redis: a
 * workflow created and executed through the API ends `completed` with its counters and
 * artifact links, the artifacts served back by the API. The model is the demo's recording.
 */

const KEY = 'api-e2e-key';
let redis: TestRedis;
let shop: ShopServer;
let dir: string;
let api: LocalServer;
let worker: Daemon;
let queueName: string;

beforeAll(async () => {
  [redis, shop, dir] = await Promise.all([startRedis(), startShopServer(), tempDir('api-e2e')]);
  queueName = `api-e2e-${randomUUID().slice(0, 8)}`;
  const artifactsDir = path.join(dir, 'artifacts');
  const logger = createSilentLogger();
  api = await startLocalServer({ port: 0, apiKeys: [KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', artifactsDir, logger, keyPrefix: `{api-${queueName}}:` });
  const config = loadConfig({
    REDIS_URL: redis.url,
    EXECUTION_QUEUE: queueName,
    API_BASE_URL: api.url,
    API_KEY: KEY,
    ARTIFACTS_DIR: artifactsDir,
    ARTIFACT_BASE_URL: `${api.url}/artifacts/`,
    BROWSER_HOST_RULES: hostRules('shop.test'),
    WORK_DIR: path.join(dir, 'work'),
    VIDEO_FPS: '5',
  });
  worker = await startDaemon(config, logger, { recording: await loadRecording(path.resolve('demo/shop.recording.json')) });
});

afterAll(async () => {
  await worker?.shutdown('test over');
  await Promise.allSettled([api?.close(), shop?.close(), redis?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function call(method: string, route: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${api.url}${route}`, {
    method,
    headers: { 'x-service-key': KEY, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('local API and worker together', () => {
  it('creates, executes and completes a workflow, with counters and playable artifacts', async () => {
    const created = await call('POST', '/api/workflows', DEMO_WORKFLOW(`${shop.origin}/`));
    expect(created.status).toBe(201);
    const workflowId = String(created.json.workflow_uuid);
    const executed = await call('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: DEMO_INPUT });
    expect(executed.status).toBe(201);
    expect(executed.json.status).toBe('queued');
    const executionId = String(executed.json.execution_uuid);

    // The worker ends the job after its final report: wait for that event, then read the API.
    const queue = new Queue(queueName, { connection: { url: redis.url } });
    try {
      await waitForJob(queue, executionId, redis.url);
    } finally {
      await queue.close();
    }
    const execution = (await call('GET', `/api/executions/${executionId}`)).json;
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
