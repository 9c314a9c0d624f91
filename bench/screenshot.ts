import os from 'node:os';
import { launchScreencastHarness } from '../test/support/screencast-session.js';
import { CPU_KINDS, cpuByKind, percentile } from './process-stats.js';

/**
 * `npm run bench -- screenshot`: the step screenshot's own cost, `Page.captureScreenshot` as
 * the worker sends it (playwright-tab.ts: JPEG quality 80, `optimizeForSpeed`) beside the
 * variants one might expect to be cheaper, on a 1280×800 page changed before each capture (as
 * after an action). Per variant, in rounds so the machine's load falls on all alike: wall time
 * p50/p90 and CPU milliseconds per capture (Node and Chromium's processes). Printed, never asserted.
 */

const CAPTURES = Number(process.env.BENCH_SCREENSHOT_CAPTURES ?? 20);
const ROUNDS = 3;
const PAGE =
  '<!doctype html><title>Orders</title><body style="font:16px sans-serif;margin:24px"><h1>Orders</h1><p id="p">Three orders are waiting.</p><label>Note <input></label><table>' +
  '<tr><td>order</td><td>12.50</td><td>waiting</td></tr>'.repeat(25) +
  '</table></body>';

const VARIANTS: Record<string, Record<string, unknown>> = {
  'jpeg 80, optimizeForSpeed (the worker)': { format: 'jpeg', quality: 80, optimizeForSpeed: true },
  'jpeg 80, default speed': { format: 'jpeg', quality: 80 },
  'jpeg 80, optimizeForSpeed, fromSurface false': { format: 'jpeg', quality: 80, optimizeForSpeed: true, fromSurface: false },
  'jpeg 80, optimizeForSpeed, captureBeyondViewport false': { format: 'jpeg', quality: 80, optimizeForSpeed: true, captureBeyondViewport: false },
  'png, optimizeForSpeed': { format: 'png', optimizeForSpeed: true },
};

export async function benchScreenshot(): Promise<Record<string, number | string>> {
  const harness = await launchScreencastHarness({ width: 1280, height: 800 });
  const load = os.loadavg()[0]!;
  try {
    await harness.page.setContent(PAGE);
    const client = await harness.page.context().newCDPSession(harness.page);
    const walls = new Map<string, number[]>(Object.keys(VARIANTS).map((name) => [name, []]));
    const cpu = new Map<string, number>(Object.keys(VARIANTS).map((name) => [name, 0]));
    const bytes = new Map<string, number>();
    let n = 0;
    for (let round = -1; round < ROUNDS; round++) {
      for (const [name, params] of Object.entries(VARIANTS)) {
        const before = cpuByKind(process.pid);
        for (let i = 0; i < CAPTURES; i++) {
          await harness.page.evaluate((text) => (document.getElementById('p')!.textContent = text), `Three orders are waiting (${n++}).`);
          const startedAt = performance.now();
          const { data } = (await client.send('Page.captureScreenshot', params)) as { data: string };
          if (round >= 0) walls.get(name)!.push(performance.now() - startedAt);
          bytes.set(name, Math.round((data.length * 3) / 4));
        }
        const after = cpuByKind(process.pid);
        if (round >= 0) cpu.set(name, cpu.get(name)! + CPU_KINDS.reduce((sum, k) => sum + after[k] - before[k], 0));
      }
    }
    const lines = ['| capture | wall p50 ms | p90 ms | CPU ms per capture | bytes |', '|---|---|---|---|---|'];
    const figures: Record<string, number | string> = {};
    Object.keys(VARIANTS).forEach((name, index) => {
      const wall = walls.get(name)!;
      const cpuMs = (cpu.get(name)! * 1000) / (ROUNDS * CAPTURES);
      lines.push(`| ${name} | ${percentile(wall, 50).toFixed(1)} | ${percentile(wall, 90).toFixed(1)} | ${cpuMs.toFixed(1)} | ${bytes.get(name)} |`);
      figures[`variant${index}.wallP50Ms`] = Number(percentile(wall, 50).toFixed(1));
      figures[`variant${index}.cpuMsPerCapture`] = Number(cpuMs.toFixed(1));
    });
    process.stdout.write(`\n${lines.join('\n')}\n`);
    figures.loadAverageAtStart = Number(load.toFixed(1));
    figures.loadAverageAtEnd = Number(os.loadavg()[0]!.toFixed(1));
    return figures;
  } finally {
    await harness.close();
  }
}
