import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { clientTypesSource } from '../../scripts/build-client-types.js';
import { createClient, verifyWebhook, WebhookVerificationError, type components, type Execution } from '../../src/client/index.js';
import { buildOpenApiDocument } from '../../src/local-service/openapi-document.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * The typed client (docs/client.md) against a real `serve`: a whole flow — a workflow made, a
 * webhook made, an execution run through the worker's reports, polled to its end, its webhook
 * checked with the client's verifier — and the proof that its types are the served document's.
 */

const KEY = 'client-key';
let redis: TestRedis;
let api: LocalServer;
let receiver: WebhookReceiver;
let raw: { body: string; headers: Record<string, string> } | undefined;

beforeAll(async () => {
  redis = await startRedis();
  const queueName = `client-${randomUUID().slice(0, 8)}`;
  api = await startLocalServer({ port: 0, apiKeys: [KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', logger: createSilentLogger(), keyPrefix: `{api-${queueName}}:`, webhookRetryScheduleMs: [100] });
  receiver = await startWebhookReceiver(() => '');
});

afterAll(async () => {
  await Promise.allSettled([api?.close(), receiver?.close()]);
  await redis?.stop();
});

describe('typed client', () => {
  it('runs a whole flow against serve, errors as values', async () => {
    const client = createClient({ baseUrl: api.url, apiKey: KEY });
    const wf = await client.POST('/api/workflows', { body: { name: 'Client flow', prompt: 'Read the page.', allowedDomains: ['example.com'] } });
    expect(wf.error).toBeUndefined();
    const workflowId = wf.data!.workflow_uuid;
    const hook = await client.POST('/api/webhooks', { body: { url: receiver.url, events: ['execution.completed'], workflowId } });
    expect(hook.response.status).toBe(201);
    const secret = hook.data!.secret;

    const ex = await client.POST('/api/workflows/{workflowId}/execute', { params: { path: { workflowId } }, body: {} });
    const executionId = ex.data!.execution_uuid;
    const waiting = client.waitForExecution(executionId, { intervalMs: 50 });
    await client.POST('/api/executions/{execution_uuid}/started', { params: { path: { execution_uuid: executionId } }, body: { startedAt: new Date().toISOString() } });
    await client.POST('/api/executions/{execution_uuid}/completed', { params: { path: { execution_uuid: executionId } }, body: { completedAt: new Date().toISOString(), durationMs: 10, nSteps: 1, nAgentActions: 1, nScreenshots: 1 } });
    const ended = await waiting;
    expect(ended.data).toMatchObject({ execution_uuid: executionId, status: 'completed', n_steps: 1 });

    const delivery = await receiver.next(() => true);
    const listed = await client.GET('/api/webhooks/{webhookId}/deliveries', { params: { path: { webhookId: hook.data!.id } } });
    expect(listed.data?.items.map((d) => d.id)).toContain(delivery.id);
    // The client's verifier over the body and headers as they came.
    raw = { body: JSON.stringify(delivery.body), headers: {} };
    const { Webhook } = await import('standardwebhooks');
    const now = new Date();
    const headers = { 'webhook-id': delivery.id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(delivery.id, now, raw.body) };
    expect(verifyWebhook(secret, raw.body, headers)).toMatchObject({ type: 'execution.completed', data: { execution: { execution_uuid: executionId } } });
    expect(() => verifyWebhook(secret, `${raw!.body} `, headers)).toThrow(WebhookVerificationError);

    // An error is a value with the document's error body.
    const missing = await client.GET('/api/executions/{executionId}', { params: { path: { executionId: 'nope' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.detail?.[0]?.type).toBe('not_found');
    const badKey = await createClient({ baseUrl: api.url, apiKey: 'wrong' }).GET('/api/workflows');
    expect(badKey.response.status).toBe(401);
    expect((await createClient({ baseUrl: api.url, apiKey: KEY }).waitForExecution('nope')).error?.detail?.[0]?.type).toBe('not_found');
  });

  it('is typed by the document serve publishes: the generated types are those of /openapi.json', async () => {
    const served = await (await fetch(`${api.url}/openapi.json`, { headers: { 'x-service-key': KEY } })).json();
    expect(await clientTypesSource(served as Record<string, unknown>)).toBe(await clientTypesSource(await buildOpenApiDocument()));
    expectTypeOf<Execution>().toEqualTypeOf<components['schemas']['Execution']>();
    expectTypeOf<Execution['n_steps']>().toEqualTypeOf<number>();
  });

  it('a field added to a schema of the document reaches the client with no edit', async () => {
    const document = await buildOpenApiDocument();
    const changed = structuredClone(document) as { components: { schemas: { Execution: { properties: Record<string, unknown>; required: string[] } } } };
    changed.components.schemas.Execution.properties.added_field = { type: 'string' };
    changed.components.schemas.Execution.required.push('added_field');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'client-types-'));
    try {
      const use = "import type { paths } from './types.js';\ntype Got = paths['/api/executions/{executionId}']['get']['responses'][200]['content']['application/json'];\nexport const field: Got['added_field'] = 'x';\n";
      await writeFile(path.join(dir, 'use.ts'), use);
      const check = async (doc: Record<string, unknown>) => {
        await writeFile(path.join(dir, 'types.ts'), await clientTypesSource(doc));
        return promisify(execFile)(process.execPath, [path.resolve('node_modules/typescript/bin/tsc'), '--ignoreConfig', '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', path.join(dir, 'use.ts')]).then(() => 'ok', (e: { stdout: string }) => e.stdout);
      };
      expect(await check(changed)).toBe('ok');
      expect(await check(document)).toContain("Property 'added_field' does not exist");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
