import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createFfmpegRecorder } from '../src/recorder/ffmpeg-recorder.js';
import type { Logger } from '../src/telemetry/types.js';
import { launchScreencastHarness } from '../test/support/screencast-session.js';

/**
 * The recorder's cost on real Chromium and ffmpeg (docs/counters-and-artifacts.md#videomp4): CPU seconds per minute of video
 * for a still page and an animated page, time from `stop()` to the file being ready, and bytes
 * per minute. Figures are printed by `npm run bench`, never asserted.
 *
 * ffmpeg's CPU is read from this process's reaped-children times (ffmpeg is the only child
 * that starts and ends during a recording); the Node side's own CPU is reported apart.
 */

const SECONDS = Number(process.env.BENCH_VIDEO_SECONDS ?? 20);
const FPS = 10;
const CRF = 30;

const STILL_PAGE = '<body style="margin:0;font:16px sans-serif"><h1>Invoices</h1><p>A form nobody touches.</p><input value="still"></body>';
const ANIMATED_PAGE =
  '<body style="margin:0"><div id="b" style="position:absolute;top:40px;width:120px;height:120px;background:#2050d0;animation:s 2s linear infinite alternate"></div>' +
  '<style>@keyframes s{from{transform:translateX(0)}to{transform:translateX(1000px)}}</style><p id="t"></p><script>setInterval(()=>{t.textContent=Date.now()},50)</script></body>';

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => silent };

export async function benchVideo(): Promise<Record<string, number>> {
  const harness = await launchScreencastHarness({ width: 1280, height: 800 });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-video-'));
  try {
    const recorder = createFfmpegRecorder({ fps: FPS, crf: CRF, logger: silent });
    // Warm-up: fluent-ffmpeg asks ffmpeg for its capabilities once per process.
    await harness.page.setContent(STILL_PAGE);
    await (await recorder.start({ session: harness.session, outputPath: path.join(dir, 'warm.mp4'), startedAtMs: Date.now() })).stop();

    const figures: Record<string, number> = {};
    for (const [name, html] of [['still', STILL_PAGE], ['animated', ANIMATED_PAGE]] as const) {
      await harness.page.setContent(html);
      const chromiumBefore = chromiumCpuSeconds();
      const before = selfTimes();
      const startedAtMs = Date.now();
      const recording = await recorder.start({ session: harness.session, outputPath: path.join(dir, `${name}.mp4`), startedAtMs });
      await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
      const endedAtMs = Date.now();
      const video = await recording.stop(endedAtMs);
      const stopMs = Date.now() - endedAtMs;
      const after = selfTimes();
      const chromiumAfter = chromiumCpuSeconds();
      if (!video) throw new Error(`no video for the ${name} page`);
      const minutes = video.durationMs / 60_000;
      const bytes = (await stat(video.path)).size;
      figures[`${name}.ffmpegCpuSecondsPerMinute`] = round((after.children - before.children) / minutes);
      figures[`${name}.nodeCpuSecondsPerMinute`] = round((after.self - before.self) / minutes);
      figures[`${name}.chromiumCpuSecondsPerMinute`] = round((chromiumAfter - chromiumBefore) / minutes);
      figures[`${name}.stopToReadyMs`] = stopMs;
      figures[`${name}.bytesPerMinute`] = Math.round(bytes / minutes);
      figures[`${name}.frames`] = video.frames;
      figures[`${name}.droppedFrames`] = video.droppedFrames;
      figures[`${name}.durationErrorMs`] = Math.round(video.durationMs - (endedAtMs - startedAtMs));
    }
    return figures;
  } finally {
    await harness.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const TICKS = 100;

/** CPU seconds of this process, and of its children already reaped (finished ffmpegs). */
function selfTimes(): { self: number; children: number } {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { self: (Number(f[11]) + Number(f[12])) / TICKS, children: (Number(f[13]) + Number(f[14])) / TICKS };
}

/** CPU seconds of every live Chromium process below this one (screencast JPEG encoding included). */
function chromiumCpuSeconds(): number {
  const parents = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      if (!/chrom/i.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1'))) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(pid, Number(f[1]));
      cpu.set(pid, (Number(f[11]) + Number(f[12])) / TICKS);
    } catch {
      // gone
    }
  }
  let total = 0;
  for (const [pid, seconds] of cpu) {
    // Chromium processes chain to the browser, whose parent is this process.
    let p = pid;
    for (let hops = 0; parents.has(p) && hops < 16; hops++) p = parents.get(p)!;
    if (p === process.pid) total += seconds;
  }
  return total;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
