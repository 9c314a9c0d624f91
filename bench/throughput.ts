/**
 * `npm run bench -- throughput` (docs/operations.md#capacity-figures): what an execution costs and how many a worker runs.
 *
 * One worker daemon (a child process, as in production) per configuration, executions with one
 * model turn (`finish` on the opening observation) on a plain page, artifacts in a local folder,
 * the scripted model answering at once. Per configuration (concurrency 1, 4 and 8; video on and
 * off): 10 executions to warm up, then 30 measured ones, enqueued together. Printed:
 *   - CPU-s per execution: CPU time of the daemon's whole process tree (Node, Chromium's
 *     processes, ffmpeg; ended processes through their parents' reaped-children time) over the
 *     30, from /proc. It counts work, not waiting, so it moves little when other processes load
 *     the machine; throughput does move with them;
 *   - executions/s: 30 over the time from enqueueing them to the last final report;
 *   - the same CPU split by process kind, per execution;
 *   - the long run: 8 concurrent executions of STEPS steps with video on and a model that takes
 *     2 s per turn, with the worker's step overhead (response received → next request sent)
 *     p50/p95 from their logs, per action space.
 * BENCH_THROUGHPUT_CONCURRENCY=1,4 and BENCH_THROUGHPUT_VIDEO=on narrow the sweep;
 * BENCH_CPU_PROF=DIR writes a V8 CPU profile of each daemon there.
 */
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startRedis } from '../demo/local-redis.js';
import { spawnDaemon, type DaemonProcess } from '../test/support/daemon-process.js';
import { tempDir } from '../test/support/env.js';
import { startRecordingApi, type RecordingApi } from '../test/support/recording-api.js';
import { delayed, finish, memberBlock, startScriptedModelServer, turn, type RecordedRequest, type ScriptedTurn } from '../test/support/scripted-model-server.js';
import { CPU_KINDS, cpuByKind, percentile, sampleTree, type CpuByKind } from './process-stats.js';
// The earlier computer tool: one action per turn, each answered with a screenshot.
import { EARLIER_TOOL_MODEL, stepOverheads } from './step-overhead.js';

const WARM_UP = 10;
const MEASURED = 30;
const LONG_RUNS = 8;
const STEPS = 12;
const MODEL_LATENCY_MS = 2_000;

const PLAIN_PAGE =
  '<!doctype html><html><head><title>Orders</title><style>body{margin:24px;font:16px/1.5 sans-serif}input{font:inherit;width:320px}</style></head>' +
  '<body><h1>Orders</h1><p>Three orders are waiting for review. Nothing on this page moves.</p>' +
  '<label>Note <input id="note" name="note"></label></body></html>';

interface Rig {
  api: RecordingApi;
  queue: Queue;
  pageUrl: string;
  env: Record<string, string>;
  dir: string;
  close(): Promise<void>;
}

/** `[case:NAME]` in the prompt chooses the script; turns already answered come from the history. */
function script(request: RecordedRequest): ScriptedTurn {
  const body = request.body as { messages?: Array<{ role: string }> };
  const answered = (body.messages ?? []).filter((m) => m.role === 'assistant').length;
  const kind = /\[case:(\w+)\]/.exec(request.rawBody)?.[1];
  if (kind === 'one') return finish('completed', { ok: true });
  const done = answered >= STEPS - 1;
  if (kind === 'browser') {
    const at = { type: 'coordinate', x: 200, y: 126 };
    const step = answered % 3 === 0 ? memberBlock('left_click', { target: at }) : answered % 3 === 1 ? memberBlock('type', { text: `step ${answered} ` }) : memberBlock('screenshot', {});
    return delayed(done ? finish('completed', { ok: true }) : turn(step), MODEL_LATENCY_MS);
  }
  const action = answered % 3 === 0 ? { action: 'left_click', coordinate: [200, 126] } : answered % 3 === 1 ? { action: 'type', text: `step ${answered} ` } : { action: 'key', text: 'End' };
  return delayed(done ? finish('completed', { ok: true }) : turn({ type: 'tool_use', id: `toolu_${randomUUID().slice(0, 8)}`, name: 'computer', input: action }), MODEL_LATENCY_MS);
}

async function startRig(): Promise<Rig> {
  const dir = await tempDir('bench-throughput');
  const page = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PLAIN_PAGE));
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  const port = (page.address() as AddressInfo).port;
  const [redis, api, model] = await Promise.all([startRedis(), startRecordingApi(), startScriptedModelServer(script)]);
  const queueName = `bench-${randomUUID().slice(0, 8)}`;
  const queue = new Queue(queueName, { connection: { url: redis.url } });
  return {
    api,
    queue,
    dir,
    pageUrl: `http://plain.test:${port}/`,
    env: {
      REDIS_URL: redis.url,
      EXECUTION_QUEUE: queueName,
      API_BASE_URL: api.url,
      API_KEY: 'bench',
      ANTHROPIC_API_KEY: 'bench',
      ANTHROPIC_BASE_URL: model.url,
      S3_BUCKET: '',
      ARTIFACTS_DIR: path.join(dir, 'artifacts'),
      BROWSER_HOST_RULES: 'MAP plain.test 127.0.0.1',
      HEALTH_PORT: '0',
      LOG_LEVEL: 'info',
    },
    async close() {
      await queue.close();
      await Promise.allSettled([model.stop(), api.close(), new Promise((resolve) => page.close(resolve))]);
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function runBatch(rig: Rig, count: number, kind: string, extra: Record<string, unknown> = {}): Promise<{ ids: string[]; seconds: number }> {
  const ids = Array.from({ length: count }, () => randomUUID());
  const startedAt = performance.now();
  const specification = { prompt: `[case:${kind}] Read the page and finish.`, allowedDomains: [new URL(rig.pageUrl).host], startUrl: rig.pageUrl, ...extra };
  await rig.queue.addBulk(ids.map((executionId) => ({ name: 'execute', data: { executionId, inputPayload: null, specification }, opts: { jobId: executionId } })));
  const finals = await Promise.all(ids.map((id) => rig.api.waitForFinal(id)));
  const seconds = (performance.now() - startedAt) / 1000;
  const failed = finals.filter((f) => !f.path.endsWith('/completed'));
  if (failed.length > 0) throw new Error(`${failed.length} bench executions failed: ${JSON.stringify(failed[0]!.body)}`);
  return { ids, seconds };
}

async function withDaemon<T>(rig: Rig, name: string, env: Record<string, string>, fn: (daemon: DaemonProcess) => Promise<T>): Promise<T> {
  const profDir = process.env.BENCH_CPU_PROF;
  const daemon = spawnDaemon(name, { ...rig.env, WORK_DIR: path.join(rig.dir, `work-${name}`), ...env }, profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}.cpuprofile`] : []);
  try {
    await daemon.waitForLog('daemon running');
    return await fn(daemon);
  } finally {
    // A graceful stop, so the profile is written; then nothing may be left behind.
    daemon.signal('SIGTERM');
    await Promise.race([daemon.exited, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
    await daemon.stop();
  }
}

interface Row {
  video: boolean;
  concurrency: number;
  cpuPerExecution: number;
  perSecond: number;
  byKind: CpuByKind;
  /** Video frames encoded and screencast frames dropped, per execution. */
  frames: number;
  dropped: number;
  /** Proportional set size of the daemon's tree: idle (Chromium warm) and the peak during the batch. */
  idlePssBytes: number;
  peakPssBytes: number;
}

/** Samples the tree's PSS every 500 ms until stopped; resolves with the peak. */
function watchPeakPss(pid: number): { stop(): number } {
  let peak = sampleTree(pid).pssBytes;
  const timer = setInterval(() => (peak = Math.max(peak, sampleTree(pid).pssBytes)), 500);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, sampleTree(pid).pssBytes);
    },
  };
}

/** Mean video frames and dropped frames of some executions, from their logs. */
async function videoFrames(rig: Rig, ids: string[]): Promise<{ frames: number; dropped: number }> {
  let frames = 0;
  let dropped = 0;
  for (const id of ids) {
    const logs = await readFile(path.join(rig.dir, 'artifacts', 'executions', id, 'logs.jsonl'), 'utf8');
    for (const line of logs.trim().split('\n')) {
      const event = JSON.parse(line) as { type: string; video?: { frames: number; droppedFrames: number } | null };
      if (event.type === 'execution_completed' && event.video) {
        frames += event.video.frames;
        dropped += event.video.droppedFrames;
      }
    }
  }
  return { frames: frames / ids.length, dropped: dropped / ids.length };
}

async function measure(rig: Rig, video: boolean, concurrency: number): Promise<Row> {
  const name = `video-${video ? 'on' : 'off'}-c${concurrency}`;
  return withDaemon(rig, name, { WORKER_CONCURRENCY: String(concurrency), VIDEO_ENABLED: String(video) }, async (daemon) => {
    await runBatch(rig, WARM_UP, 'one');
    const idlePssBytes = sampleTree(daemon.pid).pssBytes;
    const before = cpuByKind(daemon.pid);
    const watch = watchPeakPss(daemon.pid);
    const { ids, seconds } = await runBatch(rig, MEASURED, 'one');
    const peakPssBytes = watch.stop();
    const after = cpuByKind(daemon.pid);
    const byKind = Object.fromEntries(CPU_KINDS.map((k) => [k, (after[k] - before[k]) / MEASURED])) as CpuByKind;
    const total = CPU_KINDS.reduce((sum, k) => sum + byKind[k], 0);
    return { video, concurrency, cpuPerExecution: total, perSecond: MEASURED / seconds, byKind, idlePssBytes, peakPssBytes, ...(await videoFrames(rig, ids)) };
  });
}

async function longRuns(rig: Rig, space: 'browser' | 'computer'): Promise<{ p50: number; p95: number; cpuPerStep: number }> {
  return withDaemon(rig, `long-${space}`, { WORKER_CONCURRENCY: String(LONG_RUNS), VIDEO_ENABLED: 'true' }, async (daemon) => {
    await runBatch(rig, 2, 'one');
    const before = cpuByKind(daemon.pid);
    const { ids } = await runBatch(rig, LONG_RUNS, space, { maxSteps: STEPS + 2, ...(space === 'computer' ? { model: EARLIER_TOOL_MODEL } : {}) });
    const after = cpuByKind(daemon.pid);
    const overheads: number[] = [];
    for (const id of ids) overheads.push(...stepOverheads(await readFile(path.join(rig.dir, 'artifacts', 'executions', id, 'logs.jsonl'), 'utf8')));
    const cpu = CPU_KINDS.reduce((sum, k) => sum + after[k] - before[k], 0);
    return { p50: percentile(overheads, 50), p95: percentile(overheads, 95), cpuPerStep: cpu / (LONG_RUNS * STEPS) };
  });
}

const MB = 1024 * 1024;
const mb = (bytes: number) => `${Math.round(bytes / MB)} MB`;

const listed = (name: string, fallback: string): string[] => (process.env[name] ?? fallback).split(',').map((s) => s.trim()).filter(Boolean);

export async function benchThroughput(): Promise<Record<string, number | string>> {
  const concurrencies = listed('BENCH_THROUGHPUT_CONCURRENCY', '1,4,8').map(Number);
  const videos = listed('BENCH_THROUGHPUT_VIDEO', 'on,off').map((v) => v === 'on');
  const rig = await startRig();
  const rows: Row[] = [];
  const figures: Record<string, number | string> = {};
  const load = os.loadavg()[0]!;
  try {
    for (const video of videos) for (const concurrency of concurrencies) rows.push(await measure(rig, video, concurrency));
    const long: Array<[string, Awaited<ReturnType<typeof longRuns>>]> = [];
    if (videos.includes(true) && process.env.BENCH_THROUGHPUT_LONG !== 'off') {
      for (const space of ['browser', 'computer'] as const) long.push([space, await longRuns(rig, space)]);
    }
    const r2 = (n: number) => n.toFixed(2);
    const lines = [
      `| video | concurrency | CPU-s per execution | executions/s | ${CPU_KINDS.join(' | ')} | frames (dropped) |`,
      `|---|---|---|---|${CPU_KINDS.map(() => '---').join('|')}|---|`,
      ...rows.map((r) => `| ${r.video ? 'on' : 'off'} | ${r.concurrency} | ${r2(r.cpuPerExecution)} | ${r2(r.perSecond)} | ${CPU_KINDS.map((k) => r2(r.byKind[k])).join(' | ')} | ${r.video ? `${r.frames.toFixed(1)} (${r.dropped.toFixed(1)})` : '–'} |`),
      '',
      // Sizing a fleet: a core does 3600 / CPU-s executions an hour; each running execution adds
      // (peak − idle) / concurrency to the worker's memory.
      '| video | concurrency | executions per core-hour | worker idle PSS | peak PSS | memory per running execution |',
      '|---|---|---|---|---|---|',
      ...rows.map((r) => `| ${r.video ? 'on' : 'off'} | ${r.concurrency} | ${Math.round(3600 / r.cpuPerExecution)} | ${mb(r.idlePssBytes)} | ${mb(r.peakPssBytes)} | ${mb((r.peakPssBytes - r.idlePssBytes) / r.concurrency)} |`),
    ];
    if (long.length > 0) {
      lines.push('', `| ${LONG_RUNS} concurrent runs of ${STEPS} steps, video on, ${MODEL_LATENCY_MS} ms model | step overhead p50 | p95 | CPU-s per step |`, '|---|---|---|---|');
      for (const [space, l] of long) lines.push(`| ${space} | ${Math.round(l.p50)} ms | ${Math.round(l.p95)} ms | ${r2(l.cpuPerStep)} |`);
    }
    process.stdout.write(`\n${lines.join('\n')}\n`);
    for (const r of rows) {
      const key = `video${r.video ? 'On' : 'Off'}.concurrency${r.concurrency}`;
      figures[`${key}.cpuSecondsPerExecution`] = Number(r2(r.cpuPerExecution));
      figures[`${key}.executionsPerSecond`] = Number(r2(r.perSecond));
      figures[`${key}.peakPssMb`] = Math.round(r.peakPssBytes / MB);
      figures[`${key}.memoryPerExecutionMb`] = Math.round((r.peakPssBytes - r.idlePssBytes) / r.concurrency / MB);
    }
    for (const [space, l] of long) figures[`long.${space}.concurrency${LONG_RUNS}.stepOverheadP95Ms`] = Math.round(l.p95);
    figures.loadAverageAtStart = Number(load.toFixed(1));
    figures.loadAverageAtEnd = Number(os.loadavg()[0]!.toFixed(1));
    return figures;
  } finally {
    await rig.close();
  }
}
