import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameHandler } from '../../src/browser/types.js';
import { createFfmpegRecorder } from '../../src/recorder/ffmpeg-recorder.js';
import type { Logger } from '../../src/telemetry/types.js';
import { createFakeSession } from '../support/fake-session.js';

/** The recorder's edges with a fake session (no browser) and a fake ffmpeg that fails. */

let dir: string;
let failingFfmpeg: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'recorder-unit-'));
  failingFfmpeg = path.join(dir, 'ffmpeg');
  await writeFile(failingFfmpeg, '#!/bin/sh\necho "boom" >&2\nexit 1\n');
  await chmod(failingFfmpeg, 0o755);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function logs(): { logger: Logger; entries: Array<{ level: string; msg?: string }> } {
  const entries: Array<{ level: string; msg?: string }> = [];
  const at = (level: string) => (_: Record<string, unknown>, msg?: string) => void entries.push({ level, ...(msg ? { msg } : {}) });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return { logger, entries };
}

function sessionWithScreencast() {
  const session = createFakeSession({ width: 320, height: 200 });
  const handlers: FrameHandler[] = [];
  let stops = 0;
  session.startScreencast = async (_options, onFrame) => {
    handlers.push(onFrame);
    return { stop: async () => void (stops += 1) };
  };
  return { session, handlers, stops: () => stops };
}

describe('ffmpeg recorder (fake session)', () => {
  it('returns null and says why when no frame ever arrived; stop is idempotent', async () => {
    const { logger, entries } = logs();
    const { session, stops } = sessionWithScreencast();
    const recording = await createFfmpegRecorder({ ffmpegPath: failingFfmpeg, fps: 10, crf: 30, logger }).start({ session, outputPath: path.join(dir, 'none.mp4'), startedAtMs: Date.now() });
    recording.mark({ atMs: Date.now(), label: 'click (1, 2)', point: { x: 1, y: 2 } });
    const first = recording.stop();
    expect(recording.stop()).toBe(first);
    expect(await first).toBeNull();
    expect(stops()).toBe(1);
    expect(entries.some((e) => e.level === 'warn' && /never sent a frame/.test(e.msg ?? ''))).toBe(true);
    expect(recording.stepsVtt()).toContain('click (1, 2)');
  });

  it('keeps taking frames when ffmpeg fails, and reports no video', async () => {
    const { logger, entries } = logs();
    const { session, handlers } = sessionWithScreencast();
    const recording = await createFfmpegRecorder({ ffmpegPath: failingFfmpeg, fps: 10, crf: 30, logger }).start({ session, outputPath: path.join(dir, 'failed.mp4'), startedAtMs: Date.now() });
    const frame = { data: Buffer.from([0xff, 0xd8, 0xff, 0xd9]), width: 320, height: 200 };
    for (let i = 0; i < 5; i++) await handlers[0]!({ ...frame, timestampMs: Date.now() });
    expect(await recording.stop()).toBeNull();
    expect(entries.some((e) => e.level === 'error')).toBe(true);
  });

  it('does not start when the run is already aborted', async () => {
    const { logger } = logs();
    const { session } = sessionWithScreencast();
    await expect(createFfmpegRecorder({ ffmpegPath: failingFfmpeg, fps: 10, crf: 30, logger }).start({ session, outputPath: path.join(dir, 'x.mp4'), startedAtMs: Date.now(), signal: AbortSignal.abort() })).rejects.toThrow();
  });
});
