import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFfmpegRecorder } from '../../src/recorder/ffmpeg-recorder.js';
import { pause, waitFor } from '../support/poll.js';
import { childProcesses } from '../support/processes.js';
import { ffprobe, isMarkerRed, isWhite, pixelAt, pixelsDuring, topLevelBoxes } from '../support/video-probe.js';
import type { Logger } from '../../src/telemetry/types.js';
import { launchScreencastHarness, type ScreencastHarness } from '../support/screencast-session.js';

/**
 * The recorder on real parts: Chromium's screencast through ffmpeg into MP4, checked with
 * ffprobe, by decoding frames, and by playing the file in Chromium.
 */

const run = promisify(execFile);
const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/video');
const FPS = 10;
const VIEWPORT = { width: 640, height: 400 };

interface LogEntry {
  level: string;
  msg: string | undefined;
  fields: Record<string, unknown>;
}

function captureLogger(entries: LogEntry[], bindings: Record<string, unknown> = {}): Logger {
  const at = (level: string) => (fields: Record<string, unknown>, msg?: string) => void entries.push({ level, msg, fields: { ...bindings, ...fields } });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (b) => captureLogger(entries, { ...bindings, ...b }) };
}

let server: http.Server;
let baseUrl: string;
let outDir: string;
let harness: ScreencastHarness;
let crashHarness: ScreencastHarness | undefined;
let stillVideoPath: string | undefined;
/** Frames in the still page's video: few, since only changes are encoded. */
let stillFrames: number | undefined;

beforeAll(async () => {
  outDir = await mkdtemp(path.join(os.tmpdir(), 'video-test-'));
  server = http.createServer((req, res) => serveFile(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  harness = await launchScreencastHarness(VIEWPORT);
});

afterAll(async () => {
  await harness?.close();
  await crashHarness?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

/** Opens a fixture page in `on` and starts recording it to `file` in the output folder. */
async function recordFixture(fixture: string, file: string, on: ScreencastHarness = harness) {
  const logs: LogEntry[] = [];
  await on.page.goto(`${baseUrl}/fixtures/${fixture}`);
  const recorder = createFfmpegRecorder({ fps: FPS, crf: 30, logger: captureLogger(logs) });
  const outputPath = path.join(outDir, file);
  const startedAtMs = Date.now();
  const recording = await recorder.start({ session: on.session, outputPath, startedAtMs });
  return { logs, page: on.page, recording, startedAtMs, outputPath };
}

describe('ffmpeg recorder on real Chromium and ffmpeg', () => {
  it('records a page with long still periods on a true timeline, with a marker where the click landed', async () => {
    const { logs, page, recording, startedAtMs } = await recordFixture('still.html', 'still.mp4');

    await pause(1200); // the page is still: no frame comes from Chromium
    const click = { x: 200, y: 150 };
    const clickAtMs = Date.now();
    // As the agent loop does: the action is marked just before it touches the page.
    recording.mark({ atMs: clickAtMs, label: 'click (200, 150)', point: click });
    await page.mouse.click(click.x, click.y);
    await pause(3000); // a long still period after the click
    recording.mark({ atMs: Date.now(), label: 'type "<b>{{password}}</b>"' });
    const endedAtMs = Date.now();
    const video = await recording.stop(endedAtMs);

    expect(video, JSON.stringify(logs)).not.toBeNull();
    stillVideoPath = video!.path;
    const wallMs = endedAtMs - startedAtMs;
    const probe = await ffprobe(video!.path);
    expect(probe.codec).toBe('h264');
    expect(probe.pixFmt).toBe('yuv420p');
    expect(probe.width % 2).toBe(0);
    expect(probe.height % 2).toBe(0);
    expect(Math.abs(probe.durationMs - wallMs)).toBeLessThanOrEqual(Math.max(0.02 * wallMs, 500));
    expect(Math.abs(video!.durationMs - wallMs)).toBeLessThanOrEqual(Math.max(0.02 * wallMs, 500));
    // A frame lasts until the picture changes: the still page is a handful of frames (the
    // first, the click's repaint, the marker's window, the end), not fps a second.
    stillFrames = probe.frames;
    expect(probe.frames).toBe(video!.frames);
    expect(probe.frames).toBeLessThan((wallMs * FPS) / 1000 / 4);
    const boxes = await topLevelBoxes(video!.path);
    expect(boxes).toContain('moov');
    expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));

    const clickSec = (clickAtMs - startedAtMs) / 1000;
    const before = await pixelAt(video!.path, Math.max(0, clickSec - 0.6), click);
    // The marker shows for 0.6 s from the click: the frames of that window show it.
    const during = await pixelsDuring(video!.path, FPS, clickSec, 0.6, click);
    const after = await pixelAt(video!.path, clickSec + 1.5, click);
    expect(isWhite(before), `before the click: ${before.join(',')}`).toBe(true);
    expect(during.length).toBeGreaterThan(3);
    expect(during.some(isMarkerRed), `marker at the click: ${JSON.stringify(during)}`).toBe(true);
    expect(isWhite(after), `after the marker: ${after.join(',')}`).toBe(true);

    const vtt = recording.stepsVtt();
    expect(vtt.startsWith('WEBVTT\n')).toBe(true);
    expect(vtt).toContain(`${vttTime(clickAtMs - startedAtMs)} --> `);
    expect(vtt).toContain('click (200, 150)');
    expect(vtt).toContain('type "&lt;b&gt;{{password}}&lt;/b&gt;"');

    // Idempotent: the second stop returns the same result without touching ffmpeg again.
    expect(await recording.stop()).toEqual(video);
    expect(childProcesses('ffmpeg')).toEqual([]);
  });

  it('records an animated page with duration equal to the wall time', async () => {
    const { logs, recording, startedAtMs } = await recordFixture('animated.html', 'animated.mp4');
    await pause(3000);
    const endedAtMs = Date.now();
    const video = await recording.stop(endedAtMs);

    expect(video, JSON.stringify(logs)).not.toBeNull();
    const wallMs = endedAtMs - startedAtMs;
    const probe = await ffprobe(video!.path);
    expect(probe.codec).toBe('h264');
    expect(probe.pixFmt).toBe('yuv420p');
    expect(Math.abs(probe.durationMs - wallMs)).toBeLessThanOrEqual(Math.max(0.02 * wallMs, 500));
    // Never more than fps frames a second; the moving page many more than the still one.
    expect(probe.frames).toBeLessThanOrEqual(Math.ceil((wallMs * FPS) / 1000) + 1);
    expect(probe.frames).toBeGreaterThan(stillFrames ?? 0);
    // The box moves (0 → 500 px in 1 s): the video shows it at different places.
    const a = await framePixels(video!.path, 0.5);
    const b = await framePixels(video!.path, 1.0);
    expect(a.equals(b)).toBe(false);
    expect(childProcesses('ffmpeg')).toEqual([]);
  });

  it('keeps drawing click markers when the frames change size mid-run', async () => {
    const { logs, page, recording, startedAtMs } = await recordFixture('still.html', 'resized.mp4');
    try {
      await pause(600);
      // Frames of another size from here on (ffmpeg scales them to the first frame's size).
      await page.setViewportSize({ width: VIEWPORT.width - 40, height: VIEWPORT.height - 20 });
      await pause(600);
      const click = { x: 200, y: 150 };
      const clickAtMs = Date.now();
      recording.mark({ atMs: clickAtMs, label: 'click (200, 150)', point: click });
      await page.mouse.click(click.x, click.y);
      await pause(1500);
      const video = await recording.stop(Date.now());

      expect(video, JSON.stringify(logs)).not.toBeNull();
      const probe = await ffprobe(video!.path);
      expect([probe.width, probe.height]).toEqual([VIEWPORT.width, VIEWPORT.height]);
      const during = await pixelsDuring(video!.path, FPS, (clickAtMs - startedAtMs) / 1000, 0.6, click);
      expect(during.some(isMarkerRed), `marker at the click: ${JSON.stringify(during)}`).toBe(true);
      expect(logs.filter((l) => /reconnecting|could not reach ffmpeg/.test(l.msg ?? ''))).toEqual([]);
    } finally {
      await page.setViewportSize(VIEWPORT);
    }
  });

  it('plays in Chromium: a <video> element reaches ended', async () => {
    expect(stillVideoPath).toBeDefined();
    const { page } = harness;
    await page.goto(`${baseUrl}/fixtures/play.html`);
    const played = await page.evaluate((src) => (window as unknown as { playToEnd(s: string): Promise<{ duration: number; width: number; height: number }> }).playToEnd(src), `/out/${path.basename(stillVideoPath!)}`);
    expect(played.width).toBe(VIEWPORT.width);
    expect(played.height).toBe(VIEWPORT.height);
    expect(played.duration).toBeGreaterThan(3);
  });

  it('keeps the run going when ffmpeg dies mid-run, and reports no video', async () => {
    const { logs, recording, outputPath } = await recordFixture('animated.html', 'killed-ffmpeg.mp4');
    const pid = await waitFor(() => childProcesses('ffmpeg').find((p) => p.cmd.includes(outputPath))?.pid);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => logs.find((l) => l.level === 'error' && /ffmpeg stopped during the run/.test(l.msg ?? '')));
    // The page keeps painting; frames keep arriving and are ignored without error.
    await pause(500);
    recording.mark({ atMs: Date.now(), label: 'click (10, 10)', point: { x: 10, y: 10 } });
    expect(await recording.stop()).toBeNull();
    expect(recording.stepsVtt()).toContain('click (10, 10)');
    expect(childProcesses('ffmpeg')).toEqual([]);
  });

  it('finalises a playable video when Chromium is killed mid-way', async () => {
    crashHarness = await launchScreencastHarness(VIEWPORT);
    const { logs, recording, startedAtMs } = await recordFixture('animated.html', 'crash.mp4', crashHarness);
    await pause(1200);
    crashHarness.killBrowser();
    await pause(800);
    const endedAtMs = Date.now();
    const video = await recording.stop(endedAtMs);

    expect(video, JSON.stringify(logs)).not.toBeNull();
    const wallMs = endedAtMs - startedAtMs;
    const probe = await ffprobe(video!.path);
    expect(probe.codec).toBe('h264');
    expect(Math.abs(probe.durationMs - wallMs)).toBeLessThanOrEqual(Math.max(0.02 * wallMs, 500));
    const boxes = await topLevelBoxes(video!.path);
    expect(boxes.indexOf('moov')).toBeGreaterThanOrEqual(0);
    expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));
    // Every frame decodes without an error.
    const decoded = await run('ffmpeg', ['-v', 'error', '-i', video!.path, '-f', 'null', '-']);
    expect(decoded.stderr.trim()).toBe('');
    await crashHarness.close();
    expect(childProcesses('ffmpeg')).toEqual([]);
  });

  it('leaves no ffmpeg or Chromium process behind', async () => {
    await harness.close();
    await crashHarness?.close();
    const left = await waitFor(() => {
      const procs = childProcesses('ffmpeg|chrom');
      return procs.length === 0 ? procs : undefined;
    });
    expect(left).toEqual([]);
  });
});

// ---- helpers ----

/** The whole picture shown at `sec` (frames last until the next one), shrunk, as raw grey bytes. */
async function framePixels(file: string, sec: number): Promise<Buffer> {
  const size = 64 * 40;
  const all = await new Promise<Buffer>((resolve, reject) =>
    execFile('ffmpeg', ['-v', 'error', '-i', file, '-vf', `scale=64:40,format=gray,fps=${FPS}:start_time=0:round=down`, '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (error, out) =>
      error ? reject(error) : resolve(out),
    ),
  );
  const at = Math.round(sec * FPS) * size;
  expect(all.length).toBeGreaterThanOrEqual(at + size);
  return all.subarray(at, at + size);
}

function vttTime(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `00:00:${String(s).padStart(2, '0')}.${String(Math.round(ms) % 1000).padStart(3, '0')}`;
}

/** Serves the fixtures at /fixtures/ and the recorded videos at /out/ (with byte ranges). */
function serveFile(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const [, root, name] = url.pathname.split('/');
  const dir = root === 'fixtures' ? FIXTURES : root === 'out' ? outDir : undefined;
  if (!dir || !name || name.includes('..')) {
    res.writeHead(404).end();
    return;
  }
  const file = path.join(dir, name);
  stat(file).then(
    ({ size }) => {
      const type = name.endsWith('.html') ? 'text/html; charset=utf-8' : name.endsWith('.mp4') ? 'video/mp4' : 'application/octet-stream';
      const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
      if (range && (range[1] || range[2])) {
        const start = range[1] ? Number(range[1]) : size - Number(range[2]);
        const end = range[1] && range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
        res.writeHead(206, { 'content-type': type, 'accept-ranges': 'bytes', 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1 });
        createReadStream(file, { start, end }).pipe(res);
        return;
      }
      res.writeHead(200, { 'content-type': type, 'accept-ranges': 'bytes', 'content-length': size });
      createReadStream(file).pipe(res);
    },
    () => res.writeHead(404).end(),
  );
}
