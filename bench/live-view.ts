/**
 * What the live view costs (docs/operations.md#the-live-view): the same scripted run on the fixture shop through the local
 * service and one worker (video on), once with nobody watching and once with a viewer reading
 * the live stream from its start. Printed: frames and bytes per second reaching the viewer,
 * the CPU spent per second of run in each case by the whole process tree (worker, local service,
 * Redis, Chromium, ffmpeg) and by the Node process alone (worker, local service and the viewer's
 * reading), and the worker's per-step overhead in each case.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRedis } from '../demo/local-redis.js';
import { startShopServer } from '../demo/shop-server.js';
import { loadConfig } from '../src/config/schema.js';
import { startDaemon } from '../src/daemon.js';
import { startLocalServer } from '../src/local-service/server.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { computer, delayed, finish, startScriptedModelServer, type ScriptedTurn } from '../test/support/scripted-model-server.js';
import { percentile, sampleTree } from './process-stats.js';
import { EARLIER_TOOL_MODEL, stepOverheads } from './step-overhead.js';

const KEY = 'bench-key';
const STEPS = 40;
/** Model latency per turn: the page is still while the model thinks, as in a real run. */
const LATENCY_MS = 300;

/**
 * Clicks and typing: each step repaints the page. The earlier computer tool, so that each turn is
 * one action as in the steps bench; the run cache off, so that every run is the model's.
 */
function script(): ScriptedTurn[] {
  const turns: ScriptedTurn[] = [];
  for (let i = 0; i < STEPS - 1; i++) turns.push(delayed(i % 2 === 0 ? computer('left_click', { coordinate: [250, 120] }) : computer('type', { text: `step ${i} ` }), LATENCY_MS));
  turns.push(delayed(finish('completed', { ok: true }), LATENCY_MS));
  return turns;
}

interface Viewer {
  frames: number;
  bytes: number;
  done: Promise<void>;
}

/** Reads the live stream the way the dashboard does, counting what arrives. */
function watch(url: string): Viewer {
  const viewer: Viewer = { frames: 0, bytes: 0, done: Promise.resolve() };
  viewer.done = new Promise<void>((resolve, reject) => {
    http
      .get(url, { headers: { 'X-Service-Key': KEY } }, (res) => {
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          viewer.bytes += Buffer.byteLength(chunk);
          const text = tail + chunk;
          viewer.frames += text.split('event: frame\n').length - 1;
          tail = text.slice(-16);
        });
        res.on('end', resolve);
      })
      .on('error', reject);
  });
  return viewer;
}

export async function benchLive(): Promise<Record<string, number>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-live-'));
  const logger = createSilentLogger();
  const [redis, shop] = await Promise.all([startRedis(), startShopServer()]);
  const queueName = `bench-live-${randomUUID().slice(0, 8)}`;
  const artifactsDir = path.join(dir, 'artifacts');
  const api = await startLocalServer({ port: 0, apiKeys: [KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', artifactsDir, logger });
  const turns: ScriptedTurn[] = [];
  const model = await startScriptedModelServer(() => turns.shift() ?? finish('completed', { ok: true }));
  const config = loadConfig({
    REDIS_URL: redis.url,
    EXECUTION_QUEUE: queueName,
    WORKER_CONCURRENCY: '1',
    API_BASE_URL: api.url,
    API_KEY: KEY,
    ANTHROPIC_API_KEY: 'bench-anthropic-key',
    ANTHROPIC_BASE_URL: model.url,
    ARTIFACTS_DIR: artifactsDir,
    BROWSER_HOST_RULES: 'MAP shop.test 127.0.0.1',
    WORK_DIR: path.join(dir, 'work'),
    LOG_LEVEL: 'silent',
  });
  const daemon = await startDaemon(config, logger);
  const call = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${api.url}${route}`, { method, headers: { 'x-service-key': KEY, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return (await res.json()) as Record<string, unknown>;
  };
  const workflow = await call('POST', '/api/workflows', { prompt: 'bench', allowedDomains: [new URL(shop.origin).host], startUrl: `${shop.origin}/`, maxSteps: STEPS + 5, model: EARLIER_TOOL_MODEL, cache: false });

  const runOnce = async (watched: boolean) => {
    turns.push(...script());
    const before = sampleTree();
    const ownBefore = process.cpuUsage();
    const started = Date.now();
    const id = String((await call('POST', `/api/workflows/${String(workflow.workflow_uuid)}/execute`, {})).execution_uuid);
    const viewer = watched ? watch(`${api.url}/live/executions/${id}`) : undefined;
    let execution: Record<string, unknown>;
    for (;;) {
      execution = await call('GET', `/api/executions/${id}`);
      if (execution.status === 'completed' || execution.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await viewer?.done;
    const seconds = (Date.now() - started) / 1000;
    const after = sampleTree();
    const own = process.cpuUsage(ownBefore);
    if (execution.status !== 'completed') throw new Error(`bench run ended ${String(execution.status)}: ${JSON.stringify(execution.error)}`);
    const logs = await readFile(path.join(artifactsDir, 'executions', id, 'logs.jsonl'), 'utf8');
    // A script the action space does not take would finish with every action refused and a still page.
    const failed = logs.split('\n').filter((line) => line.includes('"type":"action"') && line.includes('"ok":false'));
    if (failed.length > 0) throw new Error(`${failed.length} actions failed in the bench run, e.g. ${failed[0]}`);
    const overheads = stepOverheads(logs);
    const runSeconds = Number(execution.duration_ms) / 1000;
    return {
      cpuPerSecond: (after.cpuSeconds - before.cpuSeconds) / seconds,
      // This process alone: the worker, the local service and the viewer, without Chromium and ffmpeg.
      nodeCpuPerSecond: (own.user + own.system) / 1e6 / seconds,
      overheadP50: percentile(overheads, 50),
      overheadP95: percentile(overheads, 95),
      framesPerSecond: viewer ? viewer.frames / runSeconds : 0,
      bytesPerSecond: viewer ? viewer.bytes / runSeconds : 0,
    };
  };

  const figures: Record<string, number> = {};
  const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
  try {
    await runOnce(false); // warms Chromium
    for (let pair = 1; pair <= 3; pair++) {
      const alone = await runOnce(false);
      const watched = await runOnce(true);
      figures[`run${pair}UnwatchedStepOverheadP50Ms`] = alone.overheadP50;
      figures[`run${pair}UnwatchedStepOverheadP95Ms`] = alone.overheadP95;
      figures[`run${pair}WatchedStepOverheadP50Ms`] = watched.overheadP50;
      figures[`run${pair}WatchedStepOverheadP95Ms`] = watched.overheadP95;
      figures[`run${pair}UnwatchedCpuCores`] = round(alone.cpuPerSecond);
      figures[`run${pair}WatchedCpuCores`] = round(watched.cpuPerSecond);
      figures[`run${pair}UnwatchedNodeCpuCores`] = round(alone.nodeCpuPerSecond);
      figures[`run${pair}WatchedNodeCpuCores`] = round(watched.nodeCpuPerSecond);
      figures[`run${pair}LiveFramesPerSecond`] = round(watched.framesPerSecond, 1);
      figures[`run${pair}LiveKBPerSecond`] = Math.round(watched.bytesPerSecond / 1000);
    }
  } finally {
    await daemon.shutdown('bench over');
    await Promise.allSettled([api.close(), model.stop(), shop.close(), redis.stop()]);
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}
