import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFfmpegRecorder } from '../../src/recorder/ffmpeg-recorder.js';
import { startSharedEncoder } from '../../src/recorder/shared-encoder.js';
import type { VideoRecorder } from '../../src/recorder/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import { pause, waitFor } from '../support/poll.js';
import { childProcesses } from '../support/processes.js';
import { launchScreencastHarness, type ScreencastHarness } from '../support/screencast-session.js';
import { ffprobe, isMarkerRed, pixelAt, pixelsDuring, topLevelBoxes } from '../support/video-probe.js';

/**
 * `VIDEO_ENCODER=shared` on real Chromium and ffmpeg: recordings one after another on one warm
 * encoder each get an MP4 of their own (their own frames, their own duration, click markers at
 * their time), an encoder dying mid-run costs that run its video only, and closing the
 * recorder leaves no ffmpeg behind.
 */

const run = promisify(execFile);
const FPS = 10;
const VIEWPORT = { width: 640, height: 400 };
const GREEN = 'rgb(0, 160, 0)';
const BLUE = 'rgb(0, 0, 200)';

interface LogEntry {
  level: string;
  msg: string | undefined;
}

function captureLogger(entries: LogEntry[]): Logger {
  const at = (level: string) => (_fields: Record<string, unknown>, msg?: string) => void entries.push({ level, msg });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => captureLogger(entries) };
}

let outDir: string;
let harness: ScreencastHarness;
let second: ScreencastHarness | undefined;
let recorder: VideoRecorder;
const logs: LogEntry[] = [];

beforeAll(async () => {
  outDir = await mkdtemp(path.join(os.tmpdir(), 'shared-encoder-test-'));
  harness = await launchScreencastHarness(VIEWPORT);
  recorder = createFfmpegRecorder({ fps: FPS, crf: 30, logger: captureLogger(logs), encoder: 'shared' });
});

afterAll(async () => {
  await recorder?.close?.();
  await harness?.close();
  await second?.close();
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

/** Shows a page of one colour and records it for about `ms`, with an optional click. */
async function recordColour(colour: string, file: string, ms: number, click?: { x: number; y: number; afterMs: number }, on: ScreencastHarness = harness) {
  await on.page.setContent(`<body style="margin:0;height:100vh;background:${colour}"></body>`);
  const outputPath = path.join(outDir, file);
  const startedAtMs = Date.now();
  const recording = await recorder.start({ session: on.session, outputPath, startedAtMs });
  let clickAtMs: number | undefined;
  if (click) {
    await pause(click.afterMs);
    clickAtMs = Date.now();
    recording.mark({ atMs: clickAtMs, label: `click (${click.x}, ${click.y})`, point: click });
    await on.page.mouse.click(click.x, click.y);
  }
  await pause(ms - (click?.afterMs ?? 0));
  const endedAtMs = Date.now();
  const video = await recording.stop(endedAtMs);
  return { video, wallMs: endedAtMs - startedAtMs, clickSec: clickAtMs === undefined ? undefined : (clickAtMs - startedAtMs) / 1000, outputPath };
}

async function expectValidMp4(file: string, wallMs: number): Promise<void> {
  const probe = await ffprobe(file);
  expect(probe.codec).toBe('h264');
  expect(probe.pixFmt).toBe('yuv420p');
  expect([probe.width, probe.height]).toEqual([VIEWPORT.width, VIEWPORT.height]);
  expect(Math.abs(probe.durationMs - wallMs)).toBeLessThanOrEqual(Math.max(0.02 * wallMs, 500));
  const boxes = await topLevelBoxes(file);
  expect(boxes.indexOf('moov')).toBeGreaterThanOrEqual(0);
  expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));
  // Every frame decodes without an error (the first is a keyframe of this video's own).
  const decoded = await run('ffmpeg', ['-v', 'error', '-i', file, '-f', 'null', '-']);
  expect(decoded.stderr.trim()).toBe('');
}

function isColour(pixel: number[], [r, g, b]: number[]): boolean {
  return pixel.every((value, i) => Math.abs(value - [r, g, b][i]!) < 40);
}

describe('shared video encoder on real Chromium and ffmpeg', () => {
  it('gives two recordings back to back one encoder and each its own MP4, markers at their time', async () => {
    const first = await recordColour(GREEN, 'first.mp4', 1500);
    expect(first.video, JSON.stringify(logs)).not.toBeNull();
    const encoders = sharedEncoders();
    expect(encoders).toHaveLength(1);

    const click = { x: 300, y: 200, afterMs: 1200 };
    const second = await recordColour(BLUE, 'second.mp4', 3000, click);
    expect(second.video, JSON.stringify(logs)).not.toBeNull();
    // The same process encoded both.
    expect(sharedEncoders()).toEqual(encoders);

    await expectValidMp4(first.outputPath, first.wallMs);
    await expectValidMp4(second.outputPath, second.wallMs);
    // Only their own frames: green from the first picture to the last, then blue likewise.
    const corner = { x: 20, y: 20 };
    expect(isColour(await pixelAt(first.outputPath, 0, corner), [0, 160, 0])).toBe(true);
    expect(isColour(await pixelAt(first.outputPath, (first.wallMs - 150) / 1000, corner), [0, 160, 0])).toBe(true);
    expect(isColour(await pixelAt(second.outputPath, 0, corner), [0, 0, 200])).toBe(true);
    expect(isColour(await pixelAt(second.outputPath, (second.wallMs - 150) / 1000, corner), [0, 0, 200])).toBe(true);

    // The click of the second run shows at its time in the second video, not before.
    const clickSec = second.clickSec!;
    const during = await pixelsDuring(second.outputPath, FPS, clickSec, 0.6, click);
    expect(during.some(isMarkerRed), `marker at the click: ${JSON.stringify(during)}`).toBe(true);
    const before = await pixelAt(second.outputPath, Math.max(0, clickSec - 0.6), click);
    expect(isColour(before, [0, 0, 200]), `before the click: ${before.join(',')}`).toBe(true);
    const after = await pixelAt(second.outputPath, clickSec + 1.2, click);
    expect(isColour(after, [0, 0, 200]), `after the marker: ${after.join(',')}`).toBe(true);
  });

  it('gives a run whose encoder dies no video, and the next run a good one from a new encoder', async () => {
    const [pid] = sharedEncoders();
    expect(pid).toBeDefined();
    await harness.page.setContent(`<body style="margin:0;height:100vh;background:${GREEN}"></body>`);
    const leases = (): number => logs.filter((l) => l.msg === 'shared encoder leased').length;
    const leasedBefore = leases();
    const recording = await recorder.start({ session: harness.session, outputPath: path.join(outDir, 'killed.mp4'), startedAtMs: Date.now() });
    // The run leases the encoder with its first frame.
    await waitFor(() => (leases() > leasedBefore ? true : undefined));
    process.kill(pid!, 'SIGKILL');
    await waitFor(() => logs.find((l) => l.level === 'error' && /ffmpeg stopped during the run/.test(l.msg ?? '')));
    expect(await recording.stop()).toBeNull();

    const next = await recordColour(BLUE, 'after-kill.mp4', 1500);
    expect(next.video, JSON.stringify(logs)).not.toBeNull();
    await expectValidMp4(next.outputPath, next.wallMs);
    const encoders = sharedEncoders();
    expect(encoders).toHaveLength(1);
    expect(encoders[0]).not.toBe(pid);
  });

  it('gives recordings running at the same time an encoder each, and reuses both afterwards', async () => {
    second = await launchScreencastHarness(VIEWPORT);
    const [green, blue] = await Promise.all([recordColour(GREEN, 'together-green.mp4', 2000), recordColour(BLUE, 'together-blue.mp4', 2000, undefined, second)]);
    expect(green.video, JSON.stringify(logs)).not.toBeNull();
    expect(blue.video, JSON.stringify(logs)).not.toBeNull();
    const encoders = sharedEncoders();
    expect(encoders).toHaveLength(2);
    await expectValidMp4(green.outputPath, green.wallMs);
    await expectValidMp4(blue.outputPath, blue.wallMs);
    const corner = { x: 20, y: 20 };
    expect(isColour(await pixelAt(green.outputPath, 0, corner), [0, 160, 0])).toBe(true);
    expect(isColour(await pixelAt(blue.outputPath, (blue.wallMs - 150) / 1000, corner), [0, 0, 200])).toBe(true);

    const again = await Promise.all([recordColour(BLUE, 'again-1.mp4', 1000), recordColour(GREEN, 'again-2.mp4', 1000, undefined, second)]);
    for (const { video } of again) expect(video, JSON.stringify(logs)).not.toBeNull();
    expect(sharedEncoders().sort()).toEqual(encoders.sort());
    await second.close();
  });

  it('leaves no ffmpeg behind once the recorder is closed', async () => {
    expect(sharedEncoders().length).toBeGreaterThan(0);
    await recorder.close?.();
    expect(childProcesses('ffmpeg')).toEqual([]);
  });
});

describe('the shared encoder process', () => {
  it('runs ffmpeg at a lower priority and reads its CPU time from /proc', async () => {
    const encoder = startSharedEncoder({ ffmpegPath: 'ffmpeg', ...VIEWPORT, fps: FPS, crf: 30, markers: false, logger: captureLogger([]) });
    try {
      const lease = encoder.lease(path.join(outDir, 'direct.mp4'), captureLogger([]));
      const { stdout: jpeg } = await run('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'color=red:s=640x400', '-frames:v', '1', '-f', 'mjpeg', 'pipe:1'], { encoding: 'buffer' });
      for (let i = 0; i < 3; i++) await lease.writeFrame(jpeg, i * 100);
      // Found by its tag on the command line (fluent-ffmpeg does not give the pid out).
      const ticks = await waitFor(() => lease.cpuTicks());
      expect(ticks).toBeGreaterThanOrEqual(0);
      const [pid] = sharedEncoders();
      expect(pid).toBeDefined();
      // `nice -n 10` adds to the worker's own niceness, capped at 19 (a runner at nice 10 gives 19):
      // asserted against this process's niceness, not a number that holds only on an un-niced runner.
      expect(os.getPriority(pid!)).toBe(Math.min(os.getPriority() + 10, 19));
      lease.end();
      expect(await lease.exited).toEqual({ ok: true });
      expect((await ffprobe(path.join(outDir, 'direct.mp4'))).codec).toBe('h264');
    } finally {
      await encoder.close();
    }
    expect(sharedEncoders()).toEqual([]);
  });
});

// ---- helpers ----

/** Pids of the running shared encoders (ffmpeg writing FLV to stdout). */
function sharedEncoders(): number[] {
  return childProcesses('ffmpeg')
    .filter((p) => p.cmd.includes('flv'))
    .map((p) => p.pid);
}

