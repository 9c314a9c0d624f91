import { open, stat } from 'node:fs/promises';
import type { Screencast } from '../browser/types.js';
import type { Logger } from '../telemetry/types.js';
import { watchFinish } from './ffmpeg-process.js';
import type { FramePump } from './frame-pump.js';
import type { RecordingMarks } from './recording-marks.js';
import type { FinishedVideo } from './types.js';

/**
 * The end of a recording: no frame after the end of the timeline, its last slots written,
 * ffmpeg's stdin closed so it writes the file's index, and ffmpeg given the time it needs —
 * signals only once it stops making progress or passes the cap (killing an encoder that is
 * only slow, on a loaded machine, loses the video).
 */

export interface FinishLimits {
  /** How long ffmpeg may use no CPU while finishing before SIGTERM. */
  idleMs: number;
  /** The longest it may take, working or not. */
  maxMs: number;
  /** Between SIGTERM and SIGKILL. */
  killGraceMs: number;
}

/** What the recorder and its end share: set by one, read by the other. */
export interface EncoderState {
  /** stdin was closed on purpose: ffmpeg exiting now is the end, not a failure. */
  endRequested: boolean;
  /** ffmpeg died during the run. */
  failed: boolean;
}

export interface FinishParts {
  pump: FramePump;
  marks: RecordingMarks;
  screencast: Screencast | undefined;
  state: EncoderState;
  outputPath: string;
  limits: FinishLimits;
  log: Logger;
}

/** Finalises the video at `endedAtMs`; null when there is none (the reason is logged). Never leaves ffmpeg running. */
export async function finishRecording(parts: FinishParts, endedAtMs: number): Promise<FinishedVideo | null> {
  const { pump, marks, state, outputPath, log } = parts;
  const stopStartedMs = Date.now();
  pump.end(endedAtMs);
  // Graceful end, then signals once ffmpeg stops making progress (or at the cap); every wait
  // below ends when ffmpeg exits.
  const unwatch = watchFinish(
    { cpuTicks: () => pump.encoder?.cpuTicks(), kill: (signal) => pump.encoder?.kill(signal) },
    parts.limits,
    (event, fields) => {
      if (event === 'waiting') log.info(fields, 'ffmpeg is still finishing the video (the machine is busy); waiting');
      else if (event === 'kill') log.warn(fields, 'ffmpeg ignored SIGTERM: SIGKILL');
      else log.warn(fields, fields.working ? 'ffmpeg did not finish within the cap: SIGTERM' : 'ffmpeg made no progress finishing: SIGTERM');
    },
  );
  try {
    // No frame after the end of the timeline. A crashed browser may fail this: the frames
    // already received are what there is.
    await parts.screencast?.stop().catch((error: unknown) => log.debug({ err: String(error) }, 'screencast stop failed'));
    await pump.drain();
    const encoder = pump.encoder;
    if (!encoder) {
      log.warn({ reason: 'no screencast frame arrived' }, 'no video: the browser never sent a frame');
      return null;
    }
    await pump.finish(endedAtMs);
    state.endRequested = true;
    marks.ending();
    encoder.end();
    const exit = await encoder.exited;
    const result: FinishedVideo = { path: outputPath, durationMs: pump.durationMs, frames: pump.framesEncoded, droppedFrames: pump.framesDropped };
    if (exit.ok && !state.failed) {
      const bytes = await stat(outputPath).then((s) => s.size, () => 0);
      log.info({ ...result, bytes, finishMs: Date.now() - stopStartedMs }, 'video ready');
      return result;
    }
    // ffmpeg writes its trailer on SIGTERM too: a file with its index is still a video.
    if (await hasMp4Index(outputPath)) {
      log.warn({ ...result, err: exit.error }, 'video finalised after an ffmpeg failure; it may be partial');
      return result;
    }
    log.error({ err: exit.error ?? 'ffmpeg failed' }, 'no video: ffmpeg did not finalise the file');
    return null;
  } finally {
    unwatch();
    // Should an error escape above, ffmpeg must still not outlive the recording.
    if (pump.encoder?.running) {
      state.endRequested = true;
      pump.encoder.end();
      pump.encoder.kill('SIGKILL');
    }
  }
}

/** Whether the MP4 has its index (`moov`) among its top-level boxes: ffmpeg finalised it. */
async function hasMp4Index(file: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(file, 'r');
    const { size } = await handle.stat();
    const header = Buffer.alloc(16);
    let offset = 0;
    while (offset + 8 <= size) {
      await handle.read(header, 0, 16, offset);
      let boxSize = header.readUInt32BE(0);
      if (header.toString('latin1', 4, 8) === 'moov') return true;
      if (boxSize === 1) boxSize = Number(header.readBigUInt64BE(8));
      if (boxSize < 8) return false;
      offset += boxSize;
    }
    return false;
  } catch {
    return false;
  } finally {
    await handle?.close();
  }
}
