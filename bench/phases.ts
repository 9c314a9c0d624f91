/**
 * `npm run bench -- phases`: where the CPU of a one-turn execution goes, phase by phase, on the
 * real adapters in this process (Chromium, ffmpeg): open the session (context, guard, page),
 * start the video, navigate, settle, the model's screenshot, the opening's page read, stop the
 * video, close the session. CPU seconds per execution by process kind, averaged over RUNS runs
 * after a warm-up. Chromium works asynchronously, so a phase's figure is what was spent while it
 * ran, not only what it caused. Printed, never asserted.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { createPlaywrightSandbox } from '../src/browser/playwright-sandbox.js';
import { createFfmpegRecorder } from '../src/recorder/ffmpeg-recorder.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { CPU_KINDS, cpuByKind, type CpuByKind } from './process-stats.js';
import { neverAborted } from '../test/support/env.js';

const RUNS = Number(process.env.BENCH_PHASES_RUNS ?? 20);
const PAGE = '<!doctype html><title>Orders</title><body style="font:16px sans-serif;margin:24px"><h1>Orders</h1><p>Three orders are waiting.</p><label>Note <input></label></body>';
const PHASES = ['open', 'video start', 'navigate', 'settle', 'screenshot', 'read page', 'video stop', 'close'] as const;

export async function benchPhases(): Promise<Record<string, number | string>> {
  const logger = createSilentLogger();
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://plain.test:${(server.address() as AddressInfo).port}/`;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-phases-'));
  const sandbox = createPlaywrightSandbox({ logger, hostRules: 'MAP plain.test 127.0.0.1' });
  const recorder = process.env.BENCH_PHASES_VIDEO === 'off' ? undefined : createFfmpegRecorder({ fps: 10, crf: 30, logger });
  const totals = new Map<string, CpuByKind>(PHASES.map((p) => [p, Object.fromEntries(CPU_KINDS.map((k) => [k, 0])) as CpuByKind]));
  const wall = new Map<string, number>(PHASES.map((p) => [p, 0]));
  try {
    for (let run = -2; run < RUNS; run++) {
      let last = cpuByKind(process.pid);
      let lastAt = performance.now();
      const mark = (phase: (typeof PHASES)[number]) => {
        const now = cpuByKind(process.pid);
        const at = performance.now();
        if (run >= 0) {
          const total = totals.get(phase)!;
          for (const k of CPU_KINDS) total[k] += now[k] - last[k];
          wall.set(phase, wall.get(phase)! + at - lastAt);
        }
        last = now;
        lastAt = at;
      };
      const signal = new AbortController().signal;
      const startedAtMs = Date.now();
      const session = await sandbox.openSession({ executionId: `phase-${run}`, viewport: { width: 1280, height: 800 }, allowedDomains: ['plain.test'], onBlocked: () => undefined }, signal);
      mark('open');
      const video = recorder ? await recorder.start({ session, outputPath: path.join(dir, `${run}.mp4`), startedAtMs }) : undefined;
      mark('video start');
      await session.navigate(url, signal);
      mark('navigate');
      await session.settle(signal);
      mark('settle');
      await session.screenshot({ format: 'jpeg', quality: 75 }, neverAborted);
      mark('screenshot');
      await session.tab()?.readPage({ filter: 'interactive', wholePage: true, maxChars: 20_000 }, neverAborted);
      mark('read page');
      await video?.stop();
      mark('video stop');
      await session.close();
      mark('close');
    }
  } finally {
    await sandbox.close();
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
  const r2 = (n: number) => (n / RUNS).toFixed(3);
  const lines = [`| phase | wall ms | ${CPU_KINDS.join(' | ')} | total |`, `|---|---|${CPU_KINDS.map(() => '---').join('|')}|---|`];
  const figures: Record<string, number> = {};
  for (const phase of PHASES) {
    const t = totals.get(phase)!;
    const sum = CPU_KINDS.reduce((s, k) => s + t[k], 0);
    lines.push(`| ${phase} | ${Math.round(wall.get(phase)! / RUNS)} | ${CPU_KINDS.map((k) => r2(t[k])).join(' | ')} | ${r2(sum)} |`);
    figures[`${phase}.cpuSeconds`] = Number(r2(sum));
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
  return figures;
}
