/**
 * Settling's figures (docs/action-spaces.md#settling) on the fixture shop, with video on: the worker's overhead per step (model
 * response received → next model request sent) beside a naive loop with the reference's fixed
 * 2 s wait; a concurrency sweep; and, through the queue and a recording API, dequeue → first
 * model request and end of run → final report.
 */
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../demo/local-redis.js';
import { startShopServer, type ShopServer } from '../demo/shop-server.js';
import type { BrowserSandbox } from '../src/browser/types.js';
import { createBrowser, createRecorder, createRunnerDeps } from '../src/compose.js';
import { loadConfig, type Config } from '../src/config/schema.js';
import { startDaemon } from '../src/daemon.js';
import { createRedisLiveRelay } from '../src/live/redis-live-relay.js';
import type { LiveRelay } from '../src/live/types.js';
import { runExecution } from '../src/runner/run-execution.js';
import { createLocalStore } from '../src/storage/local-store.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { tracingSettingsSchema } from '../src/config/tracing.js';
import type { Tracing } from '../src/telemetry/types.js';
import { startTracing, WORKER_SERVICE_NAME } from '../src/tracing/start.js';
import { startOtlpReceiver } from '../test/support/otlp-receiver.js';
import { startRecordingApi } from '../test/support/recording-api.js';
import { computer, delayed, finish, startScriptedModelServer, type ScriptedTurn } from '../test/support/scripted-model-server.js';
import { addCost } from './cost.js';
import { percentile, sampleTree } from './process-stats.js';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';

const logger = createSilentLogger();
/**
 * These figures are those of computer use with one action per turn (the earlier tool version,
 * as they were first measured); the browser toolset's are in bench/toolset.ts.
 */
export const EARLIER_TOOL_MODEL = 'claude-opus-4-7';

/** Steps that touch the page: clicks, typing, a key — what a real run does. */
function script(steps: number, latencyMs: number): ScriptedTurn[] {
  const actions: ScriptedTurn[] = [];
  for (let i = 0; i < steps - 1; i++) {
    const turn = i % 3 === 0 ? computer('left_click', { coordinate: [250, 120] }) : i % 3 === 1 ? computer('type', { text: `step ${i} ` }) : computer('key', { text: 'ctrl+a' });
    actions.push(latencyMs > 0 ? delayed(turn, latencyMs) : turn);
  }
  actions.push(latencyMs > 0 ? delayed(finish('completed', { ok: true }), latencyMs) : finish('completed', { ok: true }));
  return actions;
}

interface RunFigures {
  overheadsMs: number[];
}

async function runOnce(options: { config: Config; browser: BrowserSandbox; shop: ShopServer; dir: string; steps: number; latencyMs: number; live: LiveRelay; tracing?: Tracing }): Promise<RunFigures> {
  const model = await startScriptedModelServer(script(options.steps, options.latencyMs));
  const config = { ...options.config, ANTHROPIC_BASE_URL: model.url };
  const recorder = createRecorder(config, logger);
  try {
    const store = createLocalStore({ dir: options.dir, prefix: '' });
    // Wired as the daemon wires it: a live relay, nobody watching.
    const deps = createRunnerDeps({ config, logger, browser: options.browser, store, live: options.live, ...(recorder ? { recorder } : {}), ...(options.tracing ? { tracing: options.tracing } : {}) });
    const executionId = randomUUID();
    const summary = await runExecution(deps, { executionId, inputPayload: null, specification: { prompt: 'bench', allowedDomains: [new URL(options.shop.origin).host], startUrl: `${options.shop.origin}/`, maxSteps: options.steps + 5, model: EARLIER_TOOL_MODEL } }, new AbortController().signal);
    if (summary.status !== 'completed') throw new Error(`bench run did not complete: ${JSON.stringify(summary)}`);
    addCost('steps', summary.document.usage.byModel);
    return { overheadsMs: stepOverheads(await readFile(fileURLToPath(summary.urls.logsUrl!), 'utf8')) };
  } finally {
    await Promise.all([model.stop(), recorder?.close?.()]);
  }
}

/** The worker's overhead of each step (response received → next request sent), from logs.jsonl. */
export function stepOverheads(logs: string): number[] {
  return logs
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; overheadMs?: number | null })
    .filter((e) => e.type === 'model_turn' && typeof e.overheadMs === 'number')
    .map((e) => e.overheadMs as number);
}

/** The reference loop's habit: wait a fixed 2 s before each screenshot instead of settling. */
function withFixedWait(browser: BrowserSandbox, waitMs: number): BrowserSandbox {
  return {
    ...browser,
    async openSession(options, signal) {
      const session = await browser.openSession(options, signal);
      return Object.assign(Object.create(session) as typeof session, {
        settle: () => new Promise<void>((resolve) => setTimeout(resolve, waitMs)),
      });
    },
  };
}

export async function benchSteps(): Promise<Record<string, number>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-steps-'));
  const [shop, redis] = await Promise.all([startShopServer(), startRedis()]);
  const config = loadConfig({ BROWSER_HOST_RULES: 'MAP shop.test 127.0.0.1', WORK_DIR: dir, ANTHROPIC_API_KEY: 'bench', LOG_LEVEL: 'silent' });
  const browser = createBrowser(config, logger);
  const live = createRedisLiveRelay({ redisUrl: redis.url, queuePrefix: 'bull', queueName: `bench-${randomUUID().slice(0, 8)}`, logger });
  const figures: Record<string, number> = {};
  try {
    // Warm the browser once so launch time is not counted as step overhead.
    await runOnce({ config, browser, shop, dir, live, steps: 2, latencyMs: 0 });
    const ours = await runOnce({ config, browser, shop, dir, live, steps: 30, latencyMs: 0 });
    const naive = await runOnce({ config, browser: withFixedWait(browser, 2_000), shop, dir, live, steps: 5, latencyMs: 0 });
    figures.stepOverheadP50Ms = percentile(ours.overheadsMs, 50);
    figures.stepOverheadP95Ms = percentile(ours.overheadsMs, 95);
    figures.naiveFixedWaitP50Ms = percentile(naive.overheadsMs, 50);
    figures.naiveOverOursRatioP50 = Math.round((figures.naiveFixedWaitP50Ms / figures.stepOverheadP50Ms) * 10) / 10;
    Object.assign(figures, await tracingOnAndOff({ config, browser, shop, dir, live }));

    // BENCH_STEPS_SWEEP=off: the overhead figures only (the sweep takes minutes).
    for (const n of process.env.BENCH_STEPS_SWEEP === 'off' ? [] : [1, 4, 8, 12]) {
      const before = sampleTree();
      let peakRss = before.rssBytes;
      let peakPss = before.pssBytes;
      const sampler = setInterval(() => {
        const now = sampleTree();
        peakRss = Math.max(peakRss, now.rssBytes);
        peakPss = Math.max(peakPss, now.pssBytes);
      }, 250);
      const started = Date.now();
      const runs = await Promise.all(Array.from({ length: n }, () => runOnce({ config, browser, shop, dir, live, steps: 8, latencyMs: 2_000 })));
      clearInterval(sampler);
      const after = sampleTree();
      const all = runs.flatMap((r) => r.overheadsMs);
      figures[`concurrency${n}StepOverheadP95Ms`] = percentile(all, 95);
      figures[`concurrency${n}CpuSecondsPerExecution`] = Math.round(((after.cpuSeconds - before.cpuSeconds) / n) * 100) / 100;
      figures[`concurrency${n}CpuUtilisation`] = Math.round(((after.cpuSeconds - before.cpuSeconds) / ((Date.now() - started) / 1000)) * 100) / 100;
      figures[`concurrency${n}RssMbPerExecution`] = Math.round((peakRss - before.rssBytes) / n / 1e6);
      figures[`concurrency${n}PssMbPerExecution`] = Math.round((peakPss - before.pssBytes) / n / 1e6);
    }
  } finally {
    await browser.close();
    await live.close();
    await Promise.allSettled([shop.close(), redis.stop()]);
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}

/**
 * The same 30-step run with tracing off and on (docs/operations.md#traces), alternated so that the
 * machine's load falls on both alike: on, every span goes over OTLP/HTTP (protobuf) to a receiver
 * that decodes it, and the settle waits are spans too (a browser of its own, made with tracing).
 */
async function tracingOnAndOff(options: { config: Config; browser: BrowserSandbox; shop: ShopServer; dir: string; live: LiveRelay }): Promise<Record<string, number>> {
  const receiver = await startOtlpReceiver();
  const tracing = await startTracing(tracingSettingsSchema.parse({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }), { serviceName: WORKER_SERVICE_NAME, logger });
  const tracedBrowser = createBrowser(options.config, logger, tracing);
  const off: number[] = [];
  const on: number[] = [];
  try {
    await runOnce({ ...options, browser: tracedBrowser, tracing, steps: 2, latencyMs: 0 });
    for (let round = 0; round < 3; round++) {
      off.push(...(await runOnce({ ...options, steps: 30, latencyMs: 0 })).overheadsMs);
      on.push(...(await runOnce({ ...options, browser: tracedBrowser, tracing, steps: 30, latencyMs: 0 })).overheadsMs);
    }
  } finally {
    await tracedBrowser.close();
    await tracing.shutdown();
    await receiver.close();
  }
  return {
    tracingOffStepOverheadP50Ms: percentile(off, 50),
    tracingOffStepOverheadP95Ms: percentile(off, 95),
    tracingOnStepOverheadP50Ms: percentile(on, 50),
    tracingOnStepOverheadP95Ms: percentile(on, 95),
    tracingOnSpansExported: receiver.spans.length,
  };
}

/** Dequeue → first model request, and end of run → final report, through the real daemon. */
export async function benchLatencies(): Promise<Record<string, number>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-latency-'));
  const [redis, shop, api] = await Promise.all([startRedis(), startShopServer(), startRecordingApi()]);
  const model = await startScriptedModelServer((_req, index) => (index % 2 === 0 ? computer('left_click', { coordinate: [250, 120] }) : finish('completed', { ok: true })));
  const queueName = `bench-${randomUUID().slice(0, 8)}`;
  const config = loadConfig({
    REDIS_URL: redis.url,
    EXECUTION_QUEUE: queueName,
    WORKER_CONCURRENCY: '1',
    API_BASE_URL: api.url,
    API_KEY: 'bench',
    ANTHROPIC_API_KEY: 'bench',
    ANTHROPIC_BASE_URL: model.url,
    ARTIFACTS_DIR: path.join(dir, 'artifacts'),
    BROWSER_HOST_RULES: 'MAP shop.test 127.0.0.1',
    WORK_DIR: path.join(dir, 'work'),
  });
  const daemon = await startDaemon(config, logger);
  const queue = new Queue(queueName, { connection: { url: redis.url } });
  const dequeueToFirst: number[] = [];
  const endToReport: number[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      const executionId = randomUUID();
      const requestsBefore = model.requests.length;
      await queue.add('execute', { executionId, inputPayload: null, specification: { prompt: 'bench', allowedDomains: [new URL(shop.origin).host], startUrl: `${shop.origin}/`, model: EARLIER_TOOL_MODEL } }, { jobId: executionId });
      const final = await api.waitForFinal(executionId);
      const reportAt = final.at;
      const job = await queue.getJob(executionId);
      const firstRequestAt = model.requests[requestsBefore]!.receivedAt;
      const logs = await readFile(path.join(dir, 'artifacts', 'executions', executionId, 'logs.jsonl'), 'utf8');
      // The run ends when the agent calls finish; video, upload and report follow.
      const end = logs.trim().split('\n').map((l) => JSON.parse(l) as { type: string; ts: string }).find((e) => e.type === 'finish')!;
      if (i === 0) continue; // the first run launches Chromium
      dequeueToFirst.push(firstRequestAt - job!.processedOn!);
      endToReport.push(reportAt - Date.parse(end.ts));
    }
  } finally {
    await daemon.shutdown('bench over');
    await queue.close();
    await Promise.allSettled([model.stop(), api.close(), shop.close(), redis.stop()]);
    await rm(dir, { recursive: true, force: true });
  }
  return {
    dequeueToFirstModelRequestP50Ms: percentile(dequeueToFirst, 50),
    dequeueToFirstModelRequestMaxMs: Math.max(...dequeueToFirst),
    endOfRunToFinalReportP50Ms: percentile(endToReport, 50),
    endOfRunToFinalReportMaxMs: Math.max(...endToReport),
  };
}
