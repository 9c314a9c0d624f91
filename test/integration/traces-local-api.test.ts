import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingSettingsSchema } from '../../src/config/tracing.js';
import { execution } from '../../src/contract/executions.js';
import { workflow as workflowAnswer } from '../../src/contract/workflows.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import type { Tracing } from '../../src/telemetry/types.js';
import { LOCAL_API_SERVICE_NAME, startTracing } from '../../src/tracing/start.js';
import { API_KEY, silentLogger } from '../contract/local-api-harness.js';
import { answerAs } from '../support/answer-as.js';
import { httpCall } from '../support/call.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * Where an execution's trace starts (docs/operations.md#traces): the local API's execute route
 * (continuing the caller's `traceparent` when it sends one) and a schedule's tick. Each puts the
 * span's `traceparent` in the job it enqueues; the spans go to a receiver in the test over
 * OTLP/HTTP with JSON bodies.
 */

let redis: TestRedis;
let receiver: OtlpReceiver;
let tracing: Tracing;
let server: LocalServer;
let executions: Queue;

beforeAll(async () => {
  [redis, receiver] = await Promise.all([startRedis(), startOtlpReceiver()]);
  const settings = tracingSettingsSchema.parse({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' });
  tracing = await startTracing(settings, { serviceName: LOCAL_API_SERVICE_NAME, logger: silentLogger });
  const queueName = `executions-${randomUUID().slice(0, 8)}`;
  server = await startLocalServer({ port: 0, apiKeys: [API_KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', keyPrefix: `{api-${randomUUID().slice(0, 8)}}:`, logger: silentLogger, allowEverySecond: true, tracing });
  executions = new Queue(queueName, { connection: { url: redis.url }, prefix: 'bull' });
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([server?.close(), executions?.close()]);
  await tracing?.shutdown();
  await Promise.allSettled([receiver?.close(), redis?.stop()]);
});

const call = httpCall(() => server.url, { 'X-Service-Key': API_KEY });

async function workflow(extra: Record<string, unknown> = {}): Promise<string> {
  const created = await call('POST', '/api/workflows', { prompt: 'Export the orders', allowed_domains: ['shop.test'], ...extra });
  expect(created.status).toBe(201);
  return answerAs(workflowAnswer, created).workflow_uuid;
}

const EXECUTE = 'POST /api/workflows/:workflowId/execute';

describe('the execute route', () => {
  it("continues the caller's traceparent and puts its own span's in the job", async () => {
    const id = await workflow();
    const caller = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };
    const executed = await call('POST', `/api/workflows/${id}/execute`, { inputPayload: { order: 'A-1' } }, { 'X-Service-Key': API_KEY, traceparent: `00-${caller.traceId}-${caller.spanId}-01` });
    expect(executed.status).toBe(201);
    const executionId = answerAs(execution, executed).execution_uuid;

    const spans = await receiver.waitFor((all) => all.some((s) => s.name === EXECUTE && s.attributes['execution.id'] === executionId));
    const span = spans.find((s) => s.name === EXECUTE && s.attributes['execution.id'] === executionId)!;
    expect(span).toMatchObject({ traceId: caller.traceId, parentSpanId: caller.spanId, kind: 2, status: { code: 0 } });
    expect(span.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/workflows/:workflowId/execute', 'url.path': `/api/workflows/${id}/execute`, 'http.response.status_code': 201, 'workflow.id': id });
    expect(span.resource['service.name']).toBe('execution-worker-api');
    const job = await executions.getJob(executionId);
    expect(job?.data.traceparent).toBe(`00-${caller.traceId}-${span.spanId}-01`);
  });

  it('starts a trace of its own without a usable traceparent, and a 404 is not a failure of the server', async () => {
    const id = await workflow();
    const executed = await call('POST', `/api/workflows/${id}/execute`, {}, { 'X-Service-Key': API_KEY, traceparent: '00-00000000000000000000000000000000-0000000000000000-01' });
    expect(executed.status).toBe(201);
    const executionId = answerAs(execution, executed).execution_uuid;
    const missing = randomUUID();
    expect((await call('POST', `/api/workflows/${missing}/execute`, {})).status).toBe(404);

    const spans = await receiver.waitFor((all) => all.some((s) => s.name === EXECUTE && s.attributes['execution.id'] === executionId) && all.some((s) => s.attributes['workflow.id'] === missing));
    const span = spans.find((s) => s.name === EXECUTE && s.attributes['execution.id'] === executionId)!;
    expect(span.parentSpanId).toBeUndefined();
    expect((await executions.getJob(executionId))?.data.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`);
    const notFound = spans.find((s) => s.attributes['workflow.id'] === missing)!;
    expect(notFound).toMatchObject({ status: { code: 0 } });
    expect(notFound.attributes['http.response.status_code']).toBe(404);
  });
});

describe('a schedule tick', () => {
  it('starts the trace of the execution it makes and puts it in the job', async () => {
    const id = await workflow({ trigger_type: 'schedule', schedule_expression: '* * * * * *' });
    const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'schedule tick' && s.attributes['workflow.id'] === id && typeof s.attributes['execution.id'] === 'string'));
    const tick = spans.find((s) => s.name === 'schedule tick' && s.attributes['workflow.id'] === id && typeof s.attributes['execution.id'] === 'string')!;
    expect(tick).toMatchObject({ kind: 5, status: { code: 0 } });
    expect(tick.parentSpanId).toBeUndefined();
    expect(tick.attributes).toMatchObject({ 'messaging.system': 'bullmq', 'workflow_version.id': expect.any(String) });
    const job = await executions.getJob(tick.attributes['execution.id'] as string);
    expect(job?.data.traceparent).toBe(`00-${tick.traceId}-${tick.spanId}-01`);
    // One tick is enough.
    expect((await call('DELETE', `/api/workflows/${id}`)).status).toBeLessThan(300);
  });
});
