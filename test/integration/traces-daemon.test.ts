import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnDaemon, stopAllDaemons } from '../support/daemon-process.js';
import { Redis } from 'ioredis';
import { answerField, answersStreamKey } from '../../src/domain/human-protocol.js';
import { browser, finish, toolUse } from '../support/scripted-model-server.js';
import { callsOf, startRig, type FaultRig } from '../faults/harness.js';
import { pathsOf, startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

/**
 * The worker daemon as a process (`src/main.ts`), its traces exported by the standard OTEL_*
 * variables to a receiver in the test (docs/operations.md#traces): a job's `traceparent` is
 * continued through the queue, the API calls carry the trace on, every log line of the execution
 * names its trace and span; without an endpoint nothing is exported and OpenTelemetry is never
 * even loaded.
 */

let rig: FaultRig;
let receiver: OtlpReceiver;

beforeAll(async () => {
  [rig, receiver] = await Promise.all([
    startRig('traces', {
      click: (turn) => (turn === 0 ? browser('left_click', { target: { type: 'coordinate', x: 250, y: 120 } }) : finish('completed', { done: true })),
      ask: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'Which delivery address?' }) : finish('completed', { asked: true })),
    }),
    startOtlpReceiver(),
  ]);
});
afterEach(stopAllDaemons);
afterAll(async () => {
  await rig?.close();
  await receiver?.close();
});

const newTraceParent = () => ({ traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') });

describe('traces of the worker daemon', () => {
  it("continues the job's traceparent, carries it to the API and writes the trace's ids in the log", async () => {
    const worker = await rig.startWorker('traced', `${rig.tmp}/work-traced`, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20otlp-secret-token-1234',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      LOG_LEVEL: 'debug',
      VIDEO_ENABLED: 'false',
    });
    const caller = newTraceParent();
    const executionId = await rig.enqueue('click', { traceparent: `00-${caller.traceId}-${caller.spanId}-01` });
    const report = await rig.api.waitForFinal(executionId);
    expect(report.path).toMatch(/\/completed$/);

    const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'execution' && s.attributes['execution.id'] === executionId));
    const root = spans.find((s) => s.name === 'execution' && s.attributes['execution.id'] === executionId)!;
    expect(root).toMatchObject({ traceId: caller.traceId, parentSpanId: caller.spanId });
    expect(root.attributes).toMatchObject({ 'workflow.id': 'wf-faults', 'workflow_version.id': 'v-1', 'execution.status': 'completed' });
    expect(root.resource['service.name']).toBe('execution-worker');
    const paths = pathsOf(spans, caller.traceId);
    expect(paths).toEqual(expect.arrayContaining(['execution > announce > POST /api/executions/{executionId}/started', 'execution > browser_phase > execute_tool left_click', 'execution > finalise > upload']));
    // The exporter sent the configured headers; the process log never shows their value.
    expect(receiver.exports[0]!.headers.authorization).toBe('Bearer otlp-secret-token-1234');
    expect(JSON.stringify(worker.logs)).not.toContain('otlp-secret-token-1234');

    // The API's calls carry the execution's trace.
    const { started, finals } = callsOf(rig.api, executionId);
    for (const call of [...started, ...finals]) expect(call.traceparent, call.path).toMatch(new RegExp(`^00-${caller.traceId}-[0-9a-f]{16}-01$`));

    // Every line the execution wrote names its trace, and a span of it.
    const spanIds = new Set(spans.filter((s) => s.traceId === caller.traceId).map((s) => s.spanId));
    const lines = worker.find((line) => line.executionId === executionId);
    expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining(['artifact uploaded', 'execution completed', 'final report delivered']));
    for (const line of lines) {
      expect(line.trace_id, line.msg).toBe(caller.traceId);
      expect(spanIds, line.msg).toContain(line.span_id);
    }
    // Lines outside any execution carry none.
    expect(worker.find('daemon running')[0]!.trace_id).toBeUndefined();
  });

  it('makes a wait for a person a span, with the waiting and resumed calls', async () => {
    await rig.startWorker('traced-human', `${rig.tmp}/work-human`, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', VIDEO_ENABLED: 'false', HUMAN_TIMEOUT_MS: '120000' });
    const executionId = await rig.enqueue('ask');
    await rig.api.waitForCall(executionId, 'waiting');
    const redis = new Redis(rig.redis.url);
    try {
      await redis.xadd(answersStreamKey('bull', rig.queueName, executionId), '*', 'answer', answerField({ answer: '1 Main St', by: 'ops' }));
    } finally {
      redis.disconnect();
    }
    expect((await rig.api.waitForFinal(executionId)).path).toMatch(/\/completed$/);
    const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'execution' && s.attributes['execution.id'] === executionId));
    const root = spans.find((s) => s.name === 'execution' && s.attributes['execution.id'] === executionId)!;
    const paths = pathsOf(spans, root.traceId);
    expect(paths).toEqual(expect.arrayContaining(['execution > browser_phase > human_wait', 'execution > browser_phase > POST /api/executions/{executionId}/waiting', 'execution > browser_phase > POST /api/executions/{executionId}/resumed']));
    const wait = spans.find((s) => s.traceId === root.traceId && s.name === 'human_wait')!;
    expect(wait.attributes).toMatchObject({ 'human.kind': 'question', 'human.outcome': expect.any(String), 'human.waited_ms': expect.any(Number) });
    expect(wait.status.code).toBe(0);
    // The answer's text is not a span's business.
    expect(JSON.stringify(spans.filter((s) => s.traceId === root.traceId))).not.toContain('1 Main St');
  });

  it('exports nothing and loads no OpenTelemetry package without an endpoint, whatever else is set', async () => {
    // A module hook that writes every package the process resolves to a file.
    const seen = path.join(rig.tmp, 'otel-modules.txt');
    await writeFile(seen, '');
    const hooks = path.join(rig.tmp, 'hooks.mjs');
    await writeFile(hooks, `import { appendFileSync } from 'node:fs';\nexport async function resolve(specifier, context, next) {\n  if (!/^(?:\\.|\\/|node:|file:|data:)/.test(specifier)) appendFileSync(${JSON.stringify(seen)}, specifier + '\\n');\n  return next(specifier, context);\n}\n`);
    const register = path.join(rig.tmp, 'register.mjs');
    await writeFile(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);

    const worker = spawnDaemon('untraced', rig.workerEnv(`${rig.tmp}/work-untraced`, { OTEL_SERVICE_NAME: 'not-exported', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_SAMPLER: 'always_on', VIDEO_ENABLED: 'false' }), ['--import', register]);
    await worker.waitForLog('daemon running');
    const caller = newTraceParent();
    const exportsBefore = receiver.exports.length;
    const executionId = await rig.enqueue('click', { traceparent: `00-${caller.traceId}-${caller.spanId}-01` });
    expect((await rig.api.waitForFinal(executionId)).path).toMatch(/\/completed$/);
    worker.signal('SIGTERM');
    expect(await worker.exited, worker.tail()).toEqual({ code: 0, signal: null });

    // The hook saw the process's packages, and none of OpenTelemetry's.
    const packages = (await readFile(seen, 'utf8')).split('\n');
    expect(packages).toEqual(expect.arrayContaining(['bullmq', 'playwright-core', 'pino']));
    // (The Anthropic SDK imports OpenTelemetry's API, a no-op without an SDK; the worker turns its tracing off.)
    expect(packages.filter((name) => /@opentelemetry\/(?!api$)|@grpc/.test(name))).toEqual([]);
    expect(receiver.exports.length).toBe(exportsBefore);
    expect(worker.logs.filter((line) => 'trace_id' in line || 'span_id' in line)).toEqual([]);
    // Nor do the API calls carry a trace.
    const { started } = callsOf(rig.api, executionId);
    expect(started[0]!.traceparent).toBeUndefined();
  });
});
