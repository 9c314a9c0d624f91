import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser, createRunnerDeps, processSecrets } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { createHttpControlPlane } from '../../src/control-plane/http-client.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createLogger } from '../../src/telemetry/logger.js';
import type { Logger, Tracing } from '../../src/telemetry/types.js';
import { startTracing, WORKER_SERVICE_NAME } from '../../src/tracing/start.js';
import { tempDir } from '../support/env.js';
import { startFilesSite, type FilesSite } from '../support/files-site.js';
import { createLogLines, type LogLine } from '../support/log-lines.js';
import { pathsOf, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { startRecordingApi, type RecordingApi } from '../support/recording-api.js';
import { browser as member, failure, finish, startScriptedModelServer, type Script, type ScriptedModelServer } from '../support/scripted-model-server.js';

/**
 * One execution as one trace (docs/operations.md#traces), exported by OpenTelemetry's own
 * exporter (http/protobuf) to a receiver in the test that decodes what arrives: the runner on
 * real Chromium, the fixture files site, the Anthropic SDK against the scripted model, the API
 * calls over HTTP to a recording API.
 */

// Quotes, a backslash, a double space, non-ASCII and over 200 characters, with a recognisable middle.
const MARK = 'q4v8q4v8';
const SECRET = `Xy"p\\w  d-é${MARK.repeat(30)}`;

let receiver: OtlpReceiver;
let site: FilesSite;
let api: RecordingApi;
let dir: string;
let config: Config;
let tracing: Tracing;
let logger: Logger;
let browser: BrowserSandbox;
/** The model the runs ask for: the configured default. */
let MODEL: string;
const log = createLogLines();

beforeAll(async () => {
  [receiver, site, api, dir] = await Promise.all([startOtlpReceiver(), startFilesSite(), startRecordingApi(), tempDir('traces')]);
  config = loadConfig({
    BROWSER_HOST_RULES: site.hostRules,
    WORK_DIR: path.join(dir, 'work'),
    ANTHROPIC_API_KEY: 'sk-ant-traces-test-key',
    ANTHROPIC_MAX_RETRIES: '0',
    VIDEO_ENABLED: 'false',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_SERVICE_NAME: 'worker-under-test',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  });
  MODEL = config.ANTHROPIC_MODEL;
  logger = createLogger({ level: 'info', destination: { write: (chunk: string) => log.write(chunk) } as unknown as NodeJS.WritableStream, secrets: processSecrets(config, {}), traceIds: () => tracing?.logFields() });
  tracing = await startTracing(config, { serviceName: WORKER_SERVICE_NAME, logger });
  browser = createBrowser(config, logger, tracing);
});

afterAll(async () => {
  await browser?.close();
  await tracing?.shutdown();
  await Promise.allSettled([site?.close(), api?.close(), receiver?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface TracedRun {
  executionId: string;
  summary: ExecutionSummary;
  root: ReceivedSpan;
  /** Every span of the execution's trace. */
  spans: ReceivedSpan[];
  /** `execution > browser_phase > chat …`, one per span. */
  paths: string[];
  /** The scripted model's count of each request's tokens. */
  accounting: ScriptedModelServer['accounting'];
}

async function run(script: Script, job: { specification?: Record<string, unknown>; inputPayload?: unknown; traceparent?: string } = {}): Promise<TracedRun> {
  const model = await startScriptedModelServer(script);
  try {
    const runConfig = { ...config, ANTHROPIC_BASE_URL: model.url };
    const controlPlane = createHttpControlPlane({ baseUrl: api.url, apiKey: 'svc-key-traces', logger, tracing, baseDelayMs: 1, maxDelayMs: 5 });
    const store = createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' });
    const deps = createRunnerDeps({ config: runConfig, logger, browser, store, controlPlane, tracing });
    const executionId = randomUUID();
    const specification = { prompt: 'Handle the files', allowedDomains: ['files.test'], startUrl: 'http://files.test/', cache: false, ...job.specification };
    const summary = await runExecution(deps, { executionId, workflowId: 'wf-traces', workflowVersionId: 'v-traces', inputPayload: job.inputPayload ?? null, specification, ...(job.traceparent ? { traceparent: job.traceparent } : {}) }, new AbortController().signal);
    // The root span ends last: once it is in, so is every span of the execution.
    const received = await receiver.waitFor((spans) => spans.some((s) => s.name === 'execution' && s.attributes['execution.id'] === executionId));
    const root = received.find((s) => s.name === 'execution' && s.attributes['execution.id'] === executionId)!;
    const spans = received.filter((s) => s.traceId === root.traceId);
    return { executionId, summary, root, spans, paths: pathsOf(spans, root.traceId), accounting: model.accounting };
  } finally {
    await model.stop();
  }
}

const click = (x: number, y: number) => member('left_click', { target: { type: 'coordinate', x, y } });
const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe('the trace of an execution', () => {
  it('continues the job traceparent: phases, model requests, tool calls, settle waits, a download, uploads and API calls, with the ids in the log', async () => {
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const r = await run([click(120, 35), finish('completed', { downloaded: true })], { traceparent: `00-${callerTrace}-${callerSpan}-01` });
    expect(r.summary).toMatchObject({ status: 'completed' });

    // One trace, continued from the job: the root's parent is the caller's span.
    expect(r.root).toMatchObject({ traceId: callerTrace, parentSpanId: callerSpan, kind: 5, status: { code: 0 } });
    expect(r.root.attributes).toMatchObject({ 'execution.id': r.executionId, 'workflow.id': 'wf-traces', 'workflow_version.id': 'v-traces', 'execution.status': 'completed', 'execution.steps': 2, 'gen_ai.request.model': MODEL });
    expect(r.root.attributes['execution.error.code']).toBeUndefined();
    expect(r.root.resource['service.name']).toBe('worker-under-test');
    for (const span of r.spans) expect(span.endMs, span.name).toBeGreaterThanOrEqual(span.startMs);

    const paths = new Set(r.paths);
    for (const expected of [
      'execution > prepare',
      'execution > announce',
      'execution > announce > POST /api/executions/{executionId}/started',
      'execution > browser_phase',
      'execution > browser_phase > open_browser',
      `execution > browser_phase > chat ${MODEL}`,
      'execution > browser_phase > execute_tool left_click',
      'execution > browser_phase > settle',
      'execution > browser_phase > download',
      'execution > finalise',
      'execution > finalise > upload',
      'execution > finalise > POST /api/executions/{executionId}/completed',
    ]) {
      expect(paths, expected).toContain(expected);
    }

    // Model requests with the GenAI conventions: one per turn.
    const chats = named(r.spans, `chat ${MODEL}`);
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.kind).toBe(3);
      expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.system': 'anthropic', 'gen_ai.request.model': MODEL, 'gen_ai.response.model': MODEL, 'gen_ai.response.finish_reasons': ['tool_use'] });
    }
    // The tokens as the API counted them for each request.
    expect(chats.map((c) => [c.attributes['gen_ai.usage.input_tokens'], c.attributes['gen_ai.usage.output_tokens'], c.attributes['gen_ai.usage.cache_read.input_tokens'], c.attributes['gen_ai.usage.cache_creation.input_tokens']])).toEqual(
      r.accounting.map((a) => [a!.input, a!.output, a!.cacheRead, a!.cacheWrite]),
    );
    expect(chats.some((c) => (c.attributes['gen_ai.usage.input_tokens'] as number) + (c.attributes['gen_ai.usage.cache_read.input_tokens'] as number) > 0)).toBe(true);
    expect(chats.map((c) => c.attributes['execution.step'])).toEqual([1, 2]);

    const [tool] = named(r.spans, 'execute_tool left_click');
    expect(tool!.attributes).toMatchObject({ 'gen_ai.tool.name': 'left_click', 'action.target': expect.any(String), 'action.outcome': 'ok', 'execution.step': 1 });
    const [download] = named(r.spans, 'download');
    expect(download!.attributes).toMatchObject({ 'download.name': 'orders.csv', 'download.state': 'completed', 'url.full': 'http://files.test/files/orders.csv', 'download.bytes': expect.any(Number) });
    const uploads = named(r.spans, 'upload').map((s) => s.attributes['artifact.name']);
    expect(uploads).toEqual(expect.arrayContaining(['output.json', 'logs.jsonl', 'downloads/orders.csv']));

    // The API calls with HTTP's client conventions; the request carried the span's traceparent.
    const [started] = named(r.spans, 'POST /api/executions/{executionId}/started');
    expect(started).toMatchObject({ kind: 3 });
    expect(started!.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200, 'url.template': '/api/executions/{executionId}/started', 'server.address': '127.0.0.1', 'url.full': `${api.url}/api/executions/${r.executionId}/started` });
    const call = api.calls.find((c) => c.path === `/api/executions/${r.executionId}/started`);
    expect(call?.traceparent).toBe(`00-${callerTrace}-${started!.spanId}-01`);

    // Every log line of the execution written while a span was open carries the trace's ids.
    const lines = log.lines.filter((l: LogLine) => l.executionId === r.executionId);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line, line.msg).toMatchObject({ trace_id: callerTrace, span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
    const spanIds = new Set(r.spans.map((s) => s.spanId));
    for (const line of lines) expect(spanIds, line.msg).toContain(line.span_id);
  });

  it('marks a failure on the root, its phase and its request, with the error code, in a trace of its own', async () => {
    // A traceparent that is not one is ignored, with a warning: the execution's trace is its own.
    const r = await run([click(120, 35), failure(400, { headers: { 'x-should-retry': 'false' } })], { traceparent: '00-not-a-trace-01' });
    expect(r.summary).toMatchObject({ status: 'failed' });
    expect(r.root.parentSpanId).toBeUndefined();
    expect(log.lines.find((l) => l.executionId === r.executionId && l.level === 'warn' && /traceparent is not a W3C traceparent/.test(l.msg))).toBeDefined();
    expect(r.root.status.code).toBe(2);
    expect(r.root.attributes).toMatchObject({ 'execution.status': 'failed', 'execution.error.code': 'model_error', 'error.type': 'model_error' });
    const [phase] = named(r.spans, 'browser_phase');
    expect(phase!.status.code).toBe(2);
    expect(phase!.attributes['error.type']).toBe('model_error');
    // The failed request is an event of the phase; the answered one a span.
    expect(named(r.spans, `chat ${MODEL}`)).toHaveLength(1);
    expect(phase!.events.map((e) => e.attributes['error.type'])).toContain('model_error');
    const [failed] = named(r.spans, 'POST /api/executions/{executionId}/failed');
    expect(failed!.attributes['http.response.status_code']).toBe(200);
  });

  it('carries no secret of the run in any name, attribute, event or status, whatever form it takes', async () => {
    const forms = [SECRET, encodeURIComponent(SECRET), JSON.stringify(SECRET), SECRET.toUpperCase(), Buffer.from(SECRET).toString('base64'), SECRET.replace(/\s+/g, ' '), SECRET.slice(0, 12)];
    const r = await run(
      [
        // The model (here, the test) sends the secret on in every form: a URL, an action's text, its verdict.
        member('navigate', { url: `http://files.test/echo/${encodeURIComponent(SECRET)}?q=${encodeURIComponent(SECRET)}` }),
        member('find', { query: forms.join(' ') }),
        finish('failed', undefined, `could not finish: ${forms.join(' | ')}`),
      ],
      { specification: { payloadSchema: { type: 'object', properties: { pw: { type: 'string', 'x-secret': true } } } }, inputPayload: { pw: SECRET } },
    );
    expect(r.summary).toMatchObject({ status: 'failed' });
    expect(r.root.attributes['execution.error.code']).toBe('agent_failed');
    // The secret's place is kept, by its placeholder.
    const text = JSON.stringify(r.spans);
    expect(text).toContain('{{pw}}');
    expect(leaks(text)).toEqual([]);
    // The API key never either.
    expect(text).not.toContain('sk-ant-traces-test-key');
  });
});

/** Any form of the secret's recognisable part left in a text. */
function leaks(text: string): string[] {
  const found: string[] = [];
  const lower = text.toLowerCase();
  if (lower.includes(MARK)) found.push('as typed or case-changed');
  if (lower.includes(encodeURIComponent('"p\\w').toLowerCase())) found.push('percent-encoded start');
  if (text.includes(Buffer.from(MARK.repeat(3)).toString('base64').slice(4, 16))) found.push('base64');
  if (/xy(?:\\*"|&quot;|%22|\\+u0022)p\\*w/i.test(text)) found.push('its start, cut short');
  return found;
}
