import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { buildEncoderArgs } from '../src/recorder/ffmpeg-process.js';
import { resolveFfmpegPath } from '../src/recorder/ffmpeg-path.js';
import { mkvFrame, mkvHeader } from '../src/recorder/mkv-stream.js';
import { launchScreencastHarness } from '../test/support/screencast-session.js';

/**
 * `npm run bench -- encoder`: the floor of one encoder per execution, in CPU seconds per ffmpeg
 * run, measured the way the recorder runs it (its arguments, a Matroska stream of JPEG frames on
 * stdin, `nice -n 10`), each step alone:
 *   - start: `ffmpeg -version`, i.e. loading the binary and its shared libraries;
 *   - decode + convert: the frames through mjpeg decoding and the scale/format filters, no encoder;
 *   - 1 frame / 4 frames: the recorder's whole command (x264, mp4 with +faststart), no click
 *     markers; a one-turn execution encodes 3–4 frames (bench -- throughput).
 * The frame is a 1280×800 screencast-quality JPEG (quality 70) of a plain page. CPU is this
 * process's reaped-children time (each run is a child that ended), mean of RUNS runs.
 * Printed, never asserted.
 */

const RUNS = Number(process.env.BENCH_ENCODER_RUNS ?? 30);
const TICKS = 100;
const PAGE = '<!doctype html><title>Orders</title><body style="font:16px sans-serif;margin:24px"><h1>Orders</h1><p>Three orders are waiting.</p><label>Note <input></label></body>';

/** CPU seconds of this process's children already reaped. */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / TICKS;
}

/** Mean CPU seconds of one run: /proc counts in 10 ms ticks, which only a mean over many runs resolves. */
function meanCpu(command: string, args: string[], input?: Buffer): number {
  const before = childrenCpu();
  for (let i = 0; i < RUNS; i++) {
    const result = spawnSync(command, args, { ...(input ? { input } : {}), stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'] });
    if (result.status !== 0) throw new Error(`${command} ${args.slice(0, 4).join(' ')} failed: ${result.stderr?.toString().slice(-300)}`);
  }
  return Math.round(((childrenCpu() - before) / RUNS) * 1000) / 1000;
}

export async function benchEncoderFloor(): Promise<Record<string, number>> {
  const { path: ffmpeg } = await resolveFfmpegPath({});
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-encoder-'));
  const harness = await launchScreencastHarness({ width: 1280, height: 800 });
  try {
    await harness.page.setContent(PAGE);
    const jpeg = await harness.page.screenshot({ type: 'jpeg', quality: 70 });
    const stream = (frames: number) => Buffer.concat([mkvHeader({ width: 1280, height: 800, frameDurationMs: 100 }), ...Array.from({ length: frames }, (_, i) => mkvFrame(jpeg, i * 500))]);
    const { input, output } = buildEncoderArgs({ ffmpegPath: ffmpeg, fps: 10, crf: 30, width: 1280, height: 800, outputPath: path.join(dir, 'out.mp4') });
    const nice = ['-n', '10', ffmpeg];
    const encode = [...nice, ...input, '-i', 'pipe:0', ...output, '-y', path.join(dir, 'out.mp4')];
    const vf = output[output.indexOf('-vf') + 1]!;
    const figures = {
      startCpuSeconds: meanCpu('nice', [...nice, '-hide_banner', '-version']),
      decodeConvert4FramesCpuSeconds: meanCpu('nice', [...nice, ...input, '-i', 'pipe:0', '-vf', vf, '-f', 'null', '-'], stream(4)),
      encode1FrameCpuSeconds: meanCpu('nice', encode, stream(1)),
      encode4FramesCpuSeconds: meanCpu('nice', encode, stream(4)),
      frameBytes: jpeg.length,
      loadAverage: Number(os.loadavg()[0]!.toFixed(1)),
    };
    const r3 = (n: number) => n.toFixed(3);
    process.stdout.write(
      `\n| ffmpeg run (mean of ${RUNS}) | CPU-s |\n|---|---|\n` +
        `| start only (-version) | ${r3(figures.startCpuSeconds)} |\n` +
        `| decode + scale/format, 4 frames, no encoder | ${r3(figures.decodeConvert4FramesCpuSeconds)} |\n` +
        `| recorder's command, 1 frame | ${r3(figures.encode1FrameCpuSeconds)} |\n` +
        `| recorder's command, 4 frames | ${r3(figures.encode4FramesCpuSeconds)} |\n`,
    );
    return figures;
  } finally {
    await harness.close();
    await rm(dir, { recursive: true, force: true });
  }
}
