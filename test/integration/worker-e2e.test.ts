import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostRules, tempDir } from '../support/env.js';
import { startRecordingApi, type RecordingApi } from '../support/recording-api.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { s3Credentials, startS3, type TestS3 } from '../support/s3.js';
import { calls, endTurn, finish, toolUse, type Script, type ScriptedTurn } from '../support/scripted-model-server.js';
import { DEMO_COMPUTER_CALLS, DEMO_INPUT, DEMO_WORKFLOW, asComputerMember, demoToolsetTurn, lastObservation, turnOf } from '../../demo/workflow.js';
import { waitForJob } from '../support/queue-events.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';
import { startTestWorker, uniqueName } from '../support/stack.js';
import { ffprobe, isMarkerRed, pixelsDuring } from '../support/video-probe.js';

/**
 * The worker end to end on real parts: Redis, BullMQ, Chromium on the fixture shop (shop.test
 * mapped to loopback), the Anthropic SDK against a scripted model server, S3 over HTTP
 * (s3rver), and an API that records every call.
 */

const SECRET = 's3cr3t-Pa55!';
const API_KEY = 'test-service-key-0001';
const ANTHROPIC_KEY = 'sk-ant-test-key-0002';

const spec = (shop: ShopServer) => DEMO_WORKFLOW(`${shop.origin}/`);
const input = { ...DEMO_INPUT, password: SECRET };

/** What a model would do on the shop with computer use, as scripted turns: 9 turns, 8 actions. */
const computerScript = (): ScriptedTurn[] => DEMO_COMPUTER_CALLS.map((call) => toolUse(call.name, call.input));
/** The same with the browser toolset: 3 turns whose references come from the worker's own page reads. */
const toolsetScript: Script = (request) => calls(demoToolsetTurn(turnOf(request.body), lastObservation(request.body)));

let redis: TestRedis;
let s3: TestS3;
let shop: ShopServer;
let api: RecordingApi;
let workDir: string;
const s3Client = () => new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3Credentials });

beforeAll(async () => {
  [redis, s3, shop, api, workDir] = await Promise.all([startRedis(), startS3(), startShopServer(), startRecordingApi(), tempDir('worker-e2e')]);
  process.env.AWS_ACCESS_KEY_ID = s3Credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = s3Credentials.secretAccessKey;
});

afterAll(async () => {
  await Promise.allSettled([redis?.stop(), s3?.stop(), shop?.close(), api?.close()]);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** A daemon on its own queue, with its own scripted model. */
async function startWorker(script: Script, extraEnv: Record<string, string> = {}) {
  const worker = await startTestWorker({
    redisUrl: redis.url,
    queueName: uniqueName('e2e'),
    apiUrl: api.url,
    key: API_KEY,
    model: script,
    logLevel: 'info',
    env: {
      WORKER_CONCURRENCY: '1',
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ANTHROPIC_MAX_RETRIES: '1',
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      S3_PREFIX: 'test',
      BROWSER_HOST_RULES: hostRules('shop.test'),
      WORK_DIR: workDir,
      VIDEO_FPS: '5',
      // A run that hangs ends as `timeout` well inside the test's own time limit.
      EXECUTION_TIMEOUT_MS: '60000',
      ...extraEnv,
    },
  });
  // Just inside the test's own limit (vitest.config.ts): a wait still pending then says which
  // one it was and what the worker logged last, where a bare test timeout would say nothing.
  const deadline = Date.now() + 85_000;
  return { ...worker, waitFor: <T>(what: string, promise: Promise<T>): Promise<T> => worker.waitFor(what, promise, deadline - Date.now()) };
}

async function object(key: string): Promise<Buffer> {
  const client = s3Client();
  try {
    const res = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    return Buffer.from(await res.Body!.transformToByteArray());
  } finally {
    client.destroy();
  }
}

const callsFor = (id: string) => api.calls.filter((c) => c.path.includes(id)).map((c) => `${c.method} ${c.path.replace(`/${id}`, '/:id')}`);

/** What differs between the two action spaces on the same shop run. */
interface ShopCase {
  script: Script;
  specification: Record<string, unknown>;
  counters: { nSteps: number; nAgentActions: number; nScreenshots: number };
  /** `action` events in logs.jsonl (reads included) and cues on the steps track (actions only). */
  actionEvents: number;
  cues: number;
  firstCue: RegExp;
  clicks: number;
  toolType: RegExp;
}

const CASES: Record<'browser toolset' | 'computer toolset' | 'computer tool', (shop: ShopServer) => ShopCase> = {
  'browser toolset': (shop) => ({
    script: toolsetScript,
    specification: spec(shop),
    // Turn 1: two form inputs, a click, a read; turn 2: a form input, a click, a read; turn 3: the
    // receipt's download link, and finish.
    counters: { nSteps: 3, nAgentActions: 6, nScreenshots: 1 },
    actionEvents: 8,
    cues: 6,
    firstCue: /^form_input ref_\d+ \(textbox "User"\) = "ann"$/,
    clicks: 3,
    toolType: /^browser_toolset_20260801$/,
  }),
  // A 5.5 model asked for computer use: the computer toolset (the only computer tool it takes),
  // one member per turn here, each turn's last result carrying a fresh screenshot.
  'computer toolset': (shop) => ({
    script: DEMO_COMPUTER_CALLS.map((call) => calls([asComputerMember(call)])),
    specification: { ...spec(shop), model: 'claude-sonnet-5-5', toolset: 'computer' },
    counters: { nSteps: 9, nAgentActions: 8, nScreenshots: 9 },
    actionEvents: 8,
    cues: 8,
    firstCue: /^click \(250, 120\)$/,
    clicks: 4,
    toolType: /^computer_toolset_20260801$/,
  }),
  // A model that takes only the earlier tool version (with its beta header).
  'computer tool': (shop) => ({
    script: computerScript(),
    specification: { ...spec(shop), model: 'claude-opus-4-7' },
    counters: { nSteps: 9, nAgentActions: 8, nScreenshots: 9 },
    actionEvents: 8,
    cues: 8,
    firstCue: /^click \(250, 120\)$/,
    clicks: 4,
    toolType: /^computer_20251124$/,
  }),
};

describe('worker end to end', () => {
  it.each(Object.keys(CASES) as Array<keyof typeof CASES>)('runs a queued execution on the shop with the %s and reports it completed with counters and artifacts', async (name) => {
    const shopCase = CASES[name](shop);
    const worker = await startWorker(shopCase.script);
    try {
      const executionId = randomUUID();
      await worker.queue.add('execute', { executionId, workflowId: 'wf-1', workflowVersionId: 'v-1', inputPayload: input, specification: shopCase.specification }, { jobId: executionId });
      const final = await worker.waitFor('the final report', api.waitForFinal(executionId));
      if (!final.path.endsWith('/completed')) {
        // Say what went wrong: the report and the run's log.
        const logs = await object(`test/executions/${executionId}/logs.jsonl`).then(String, () => '(no logs)');
        throw new Error(`the run failed: ${JSON.stringify(final.body)}\n${logs.slice(-4000)}`);
      }

      expect(callsFor(executionId)).toEqual(['POST /api/executions/:id/started', 'POST /api/executions/:id/completed']);
      expect(api.calls.every((c) => c.serviceKey === API_KEY)).toBe(true);
      const started = api.calls.find((c) => c.path.endsWith(`${executionId}/started`))!;
      expect(Object.keys(started.body as object)).toEqual(['startedAt']);
      expect(new Date((started.body as { startedAt: string }).startedAt).toISOString()).toBe((started.body as { startedAt: string }).startedAt);

      const body = final.body as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['completedAt', 'durationMs', 'logsUrl', 'nAgentActions', 'nScreenshots', 'nSteps', 'outputUrl', 'videoUrl'].sort());
      expect(body).toMatchObject(shopCase.counters);
      expect(body.durationMs).toBeGreaterThan(0);
      const prefix = `test/executions/${executionId}/`;
      for (const [field, file] of [['outputUrl', 'output.json'], ['videoUrl', 'video.mp4'], ['logsUrl', 'logs.jsonl']] as const) {
        expect(body[field]).toBe(`${s3.endpoint}/${s3.bucket}/${prefix}${file}`);
      }

      // The shop really received what the agent typed, the secret included.
      expect(shop.forms).toContainEqual({ path: '/login', fields: { user: 'ann', password: SECRET } });
      expect(shop.forms).toContainEqual({ path: '/order', fields: { reference: 'PO-778', quantity: '1' } });
      // Once the run has ended, the job BullMQ keeps for days holds the input masked.
      await worker.waitFor('the job to end', waitForJob(worker.queue, executionId, redis.url));
      expect((await worker.queue.getJob(executionId))!.data.inputPayload).toEqual({ ...input, password: '{{password}}' });

      // Artifacts: present, parseable, consistent, and without secrets.
      const output = JSON.parse((await object(`${prefix}output.json`)).toString());
      expect(output).toMatchObject({ status: 'completed', output: { orderId: 'A-1001' }, error: null, counters: shopCase.counters });
      if (name === 'browser toolset') {
        // The receipt the agent downloaded is kept with the run, listed in output.json.
        expect(output.downloads).toEqual([expect.objectContaining({ name: 'receipt-A-1001.csv', url: `${shop.origin}/receipt/A-1001.csv`, contentType: 'text/csv', bytes: 30 })]);
        expect((await object(`${prefix}downloads/receipt-A-1001.csv`)).toString()).toBe('order,reference\nA-1001,PO-778\n');
      }
      // Billed fresh, read from or written to the prompt cache (the model server counts each).
      expect(output.usage.inputTokens + output.usage.cacheReadInputTokens + output.usage.cacheCreationInputTokens).toBeGreaterThan(0);
      expect(output.usage.cacheReadInputTokens).toBeGreaterThan(0);
      const logs = (await object(`${prefix}logs.jsonl`)).toString();
      const events = logs.trim().split('\n').map((line) => JSON.parse(line) as { type: string; t: number });
      const count = (type: string) => events.filter((e) => e.type === type).length;
      expect(count('model_turn')).toBe(shopCase.counters.nSteps);
      expect(count('action')).toBe(shopCase.actionEvents);
      expect(count('execution_started')).toBe(1);
      expect(count('execution_completed')).toBe(1);
      const recording = JSON.parse((await object(`${prefix}recording.json`)).toString());
      expect(recording.turns).toHaveLength(shopCase.counters.nSteps);
      expect(recording.toolVersion).toMatch(shopCase.toolType);
      const video = await object(`${prefix}video.mp4`);
      expect(video.subarray(4, 8).toString()).toBe('ftyp');
      // The video covers the run on a real-time timeline: its length is the reported duration,
      // to the frame (VIDEO_FPS 5: 200 ms, plus the container's rounding), however late the
      // recorder gets to the work it still had queued at the end.
      const videoFile = path.join(workDir, `${executionId}.mp4`);
      await writeFile(videoFile, video);
      const probe = await ffprobe(videoFile);
      expect(probe.codec).toBe('h264');
      expect(probe.pixFmt).toBe('yuv420p');
      expect(Math.abs(probe.durationMs - (body.durationMs as number))).toBeLessThanOrEqual(Math.max(220, 0.02 * (body.durationMs as number)));
      // Every click shows its marker where it landed (by reference: at the element's point), in
      // the frames of the 0.6 s after its logged time (VIDEO_FPS 5: frames 0.2 s apart).
      const clicks = events.filter((e) => e.type === 'action' && /click/.test((e as { action?: string }).action ?? '')) as unknown as Array<{ t: number; point: { x: number; y: number } }>;
      expect(clicks).toHaveLength(shopCase.clicks);
      for (const { t, point } of clicks) {
        expect(point).toBeDefined();
        const frames = await pixelsDuring(videoFile, 5, t / 1000, 0.6, point);
        // A click in the run's last moments may have no frame after it: the run ended.
        if (frames.length > 0) expect(frames.some(isMarkerRed), `marker of the click at ${t} ms: ${JSON.stringify(frames)}`).toBe(true);
      }
      const vtt = (await object(`${prefix}steps.vtt`)).toString();
      expect(vtt.startsWith('WEBVTT')).toBe(true);
      expect(vtt.split('-->').length - 1).toBe(shopCase.cues);
      expect(vtt).toContain('{{password}}');
      const firstCue = /^(\d\d):(\d\d):(\d\d)\.(\d\d\d) --> .*\n(.*)$/m.exec(vtt)!;
      const cueMs = ((Number(firstCue[1]) * 60 + Number(firstCue[2])) * 60 + Number(firstCue[3])) * 1000 + Number(firstCue[4]);
      expect(firstCue[5]).toMatch(shopCase.firstCue);
      const firstAction = events.find((e) => e.type === 'action')!;
      expect(Math.abs(cueMs - firstAction.t)).toBeLessThanOrEqual(5);
      expect(vtt).not.toContain(SECRET);
      for (const text of [logs, JSON.stringify(output), JSON.stringify(recording), JSON.stringify(worker.model.requests.map((r) => r.body))]) {
        expect(text).not.toContain(SECRET);
        expect(text).not.toContain(API_KEY);
        expect(text).not.toContain(ANTHROPIC_KEY);
      }
      // The model saw the placeholder, and the action space it was given.
      const lastRequest = worker.model.requests.at(-1)!.body as { system: Array<{ text: string }>; tools: Array<{ type?: string }> };
      expect(lastRequest.system[0]!.text).toContain('{{password}}');
      expect(lastRequest.tools[0]!.type).toMatch(shopCase.toolType);
      // No beta header for the toolsets (generally available); the earlier tool has its own.
      // Beside it, the API's context management (docs/model.md#context-settings), which every
      // model of these runs has (compaction too on the toolset models).
      const tool = name === 'computer tool' ? ['computer-use-2025-11-24'] : [];
      const context = name === 'computer tool' ? ['context-management-2025-06-27'] : ['context-management-2025-06-27', 'compact-2026-01-12'];
      const beta = [...tool, ...context].join(',');
      expect(worker.model.requests.map((r) => r.headers['anthropic-beta'])).toEqual(worker.model.requests.map(() => beta));
      // Every result of a toolset member echoes its toolset_name; no other result has one.
      type Block = { type: string; id?: string; tool_use_id?: string; toolset_name?: string };
      const blocks = worker.model.requests.flatMap((q) => (q.body as { messages: Array<{ content: unknown }> }).messages.flatMap((m) => (Array.isArray(m.content) ? (m.content as Block[]) : [])));
      const toolsetOf = new Map(blocks.filter((b) => b.type === 'tool_use').map((b) => [b.id, b.toolset_name]));
      const answered = blocks.filter((b) => b.type === 'tool_result');
      expect(answered.length).toBeGreaterThan(0);
      for (const r of answered) expect(r.toolset_name).toBe(toolsetOf.get(r.tool_use_id));
    } finally {
      await worker.stop();
    }
  });

  it('fetches the specification and input from the API when the job carries neither', async () => {
    const worker = await startWorker([endTurn('Nothing to do here.'), finish('completed', { orderId: 'none' })]);
    try {
      const executionId = randomUUID();
      api.executions.set(executionId, { execution_uuid: executionId, workflow_uuid: 'wf-2', workflow_version_uuid: 'v-2', status: 'queued', input_payload: input });
      api.versions.set('wf-2', [
        { workflow_version_uuid: 'v-1', workflow_uuid: 'wf-2', specification: { prompt: 'old', allowedDomains: ['old.test'] }, version: 1, is_current: false },
        { workflow_version_uuid: 'v-2', workflow_uuid: 'wf-2', specification: spec(shop), version: 2, is_current: true },
      ]);
      await worker.queue.add('execute', { executionId }, { jobId: executionId });
      const final = await worker.waitFor('the final report', api.waitForFinal(executionId));
      expect(api.calls.filter((c) => c.path === `/api/executions/${executionId}` || c.path === '/api/workflows/wf-2/versions').map((c) => c.path)).toEqual([
        `/api/executions/${executionId}`,
        '/api/workflows/wf-2/versions',
      ]);
      expect(final.path).toMatch(/\/completed$/);
      expect(final.body).toMatchObject({ nSteps: 2, nAgentActions: 0, nScreenshots: 1 });
    } finally {
      await worker.stop();
    }
  });

  it('does not run an execution the API says is no longer runnable, nor one that already ended', async () => {
    const worker = await startWorker([finish('completed', { orderId: 'x' })]);
    try {
      const gone = randomUUID();
      api.startedStatus.set(gone, 409);
      const job = await worker.queue.add('execute', { executionId: gone, inputPayload: input, specification: spec(shop) }, { jobId: gone });
      await expect(worker.waitFor('the refused job to end', waitForJob(worker.queue, job.id!, redis.url))).resolves.toMatchObject({ status: 'skipped' });
      expect(callsFor(gone)).toEqual(['POST /api/executions/:id/started']);
      expect(worker.model.requests).toHaveLength(0);

      // Run one to its end, then deliver its job again: it is not run twice.
      const once = randomUUID();
      await worker.queue.add('execute', { executionId: once, inputPayload: input, specification: spec(shop) }, { jobId: once });
      await worker.waitFor('the final report of the first run', api.waitForFinal(once));
      await worker.waitFor('the first run\'s job to end', waitForJob(worker.queue, once, redis.url));
      await (await worker.queue.getJob(once))!.remove();
      const again = await worker.queue.add('execute', { executionId: once, inputPayload: input, specification: spec(shop) }, { jobId: once });
      await expect(worker.waitFor('the re-delivered job to end', waitForJob(worker.queue, again.id!, redis.url))).resolves.toMatchObject({ status: 'skipped', code: 'already_ended' });
      expect(callsFor(once).filter((c) => c.endsWith('started'))).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });

  it('fails bad jobs and bad input clearly, before any browser or model, and keeps serving', async () => {
    const worker = await startWorker([finish('completed', { orderId: 'ok' })]);
    try {
      // Malformed data with a readable id: reported as invalid_job.
      const badJob = randomUUID();
      await worker.queue.add('execute', { executionId: badJob, specification: 'not an object' }, { jobId: badJob });
      const badJobReport = await worker.waitFor('the invalid_job report', api.waitForFinal(badJob));
      expect(badJobReport.path).toMatch(/\/failed$/);
      expect(badJobReport.body).toMatchObject({ error: { code: 'invalid_job' }, nSteps: 0, videoUrl: null });

      // Unreadable data: the job fails in the queue with the reason.
      const orphan = await worker.queue.add('execute', { hello: 'world' });
      await expect(worker.waitFor('the unreadable job to fail', waitForJob(worker.queue, orphan.id!, redis.url))).rejects.toThrow(/executionId/);

      // Input failing the payload schema: invalid_input, never started, no model call.
      const badInput = randomUUID();
      await worker.queue.add('execute', { executionId: badInput, inputPayload: { user: 'ann' }, specification: spec(shop) }, { jobId: badInput });
      const badInputReport = await worker.waitFor('the invalid_input report', api.waitForFinal(badInput));
      expect(badInputReport.body).toMatchObject({ error: { code: 'invalid_input' }, durationMs: 0, videoUrl: null });
      expect((badInputReport.body as { error: { message: string } }).error.message).toContain('password');
      expect(callsFor(badInput)).toEqual(['POST /api/executions/:id/failed']);

      // A bad specification: invalid_specification.
      const badSpec = randomUUID();
      await worker.queue.add('execute', { executionId: badSpec, inputPayload: null, specification: { prompt: 'x', allowedDomains: [] } }, { jobId: badSpec });
      expect((await worker.waitFor('the invalid_specification report', api.waitForFinal(badSpec))).body).toMatchObject({ error: { code: 'invalid_specification' } });
      expect(worker.model.requests).toHaveLength(0);

      // The worker still runs good work.
      const good = randomUUID();
      await worker.queue.add('execute', { executionId: good, inputPayload: input, specification: spec(shop) }, { jobId: good });
      expect((await worker.waitFor('the good run\'s report', api.waitForFinal(good))).path).toMatch(/\/completed$/);
    } finally {
      await worker.stop();
    }
  });
});
