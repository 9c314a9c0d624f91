import { mkdir, mkdtemp, open, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Screencast, ScreencastFrame } from '../browser/types.js';
import type { Logger } from '../telemetry/types.js';
import { createClickMarker, MARKER_DURATION_MS, type ClickMarker } from './click-marker.js';
import { availableFilters, startEncoder, watchFinish, type EncoderProcess } from './ffmpeg-process.js';
import { resolveFfmpegPath, type FfmpegLocation } from './ffmpeg-path.js';
import { createFramePacer, slotStartMs, type PacedWrite } from './frame-pacer.js';
import { mkvFrame, mkvHeader } from './mkv-stream.js';
import { buildStepsVtt } from './steps-vtt.js';
import type { ActionMark, ActiveRecording, FinishedVideo, RecorderOptions, VideoRecorder } from './types.js';

/**
 * The video recorder: the session's screencast, paced onto the wall-clock timeline, encoded
 * to H.264 by one single-threaded ffmpeg while the run goes (issue 3).
 *
 * Flow of a frame: Chromium paints → the adapter calls `onFrame` → the frame waits in a
 * one-place mailbox → the pump gives it to the pacer, which says which earlier frame to write
 * and at which time → the bytes go to ffmpeg's stdin, one Matroska cluster per frame → when
 * the pipe drains (and the frame's slot is over) `onFrame` settles and the adapter
 * acknowledges the frame, so Chromium sends the next one. A slow ffmpeg therefore slows
 * Chromium's frames instead of growing a buffer, and a frame that finds the mailbox full
 * replaces the one waiting there (that one is dropped).
 *
 * Only frames that change the picture are encoded (issue 13): a frame lasts until the next
 * one, so a page that stays still while the model thinks costs ffmpeg nothing; click markers
 * ask the pacer for a frame at the start and the end of their window.
 */

export interface FfmpegRecorderOptions {
  /** ffmpeg binary (`FFMPEG_PATH`); empty tries `PATH`, then the `ffmpeg-static` package. */
  ffmpegPath?: string;
  /** Video frame rate (`VIDEO_FPS`). */
  fps: number;
  /** x264 CRF (`VIDEO_CRF`): lower is better quality and bigger files. */
  crf: number;
  logger: Logger;
  /** JPEG quality Chromium encodes screencast frames with. Default 70. */
  jpegQuality?: number;
  /**
   * How long ffmpeg may go without using any CPU while it finishes after `stop()` before it
   * gets SIGTERM. Default 20 s. An encoder that works (slowly, on a loaded machine, where its
   * lower priority starves it) is given more of these, up to `finishMaxMs`.
   */
  finishTimeoutMs?: number;
  /**
   * The longest ffmpeg may take to finish after `stop()`, working or not. Default 45 s: inside
   * the minute a stopping daemon gives its executions to finalise and upload.
   */
  finishMaxMs?: number;
  /** Between SIGTERM and SIGKILL. Default 3 s. */
  killGraceMs?: number;
}

/**
 * Slots are closed this long after the fact: a frame painted just before now may still be on
 * its way, and the slot it belongs to should not be closed with the older frame.
 */
const STILL_LAG_MS = 500;
/**
 * Frames written before the marker channel may be waited for: ffmpeg builds its filter graph
 * (and the marker channel with it) from the first frame. One only: with a variable rate the
 * second frame may already be seconds later, past a click.
 */
const MARKER_FREE_FRAMES = 1;
/**
 * How often slots are closed while the run goes: the last frame painted, and a click marker's
 * frames, reach ffmpeg within a second or two even when nothing else is painted.
 */
const STILL_TICK_MS = 1000;
/** A frame timestamp further than this from our clock is not trusted (the arrival time is used). */
const MAX_CLOCK_SKEW_MS = 60_000;

export function createFfmpegRecorder(opts: FfmpegRecorderOptions): VideoRecorder {
  const logger = opts.logger;
  let location: Promise<FfmpegLocation> | undefined;
  let warnedNoMarkers = false;

  const locate = (): Promise<FfmpegLocation> => {
    location ??= resolveFfmpegPath(opts.ffmpegPath ? { configuredPath: opts.ffmpegPath } : {}).then((found) => {
      logger.info({ ffmpegPath: found.path, source: found.source }, 'ffmpeg found');
      return found;
    });
    // A failed lookup is retried on the next recording (the binary may be installed by then).
    location.catch(() => (location = undefined));
    return location;
  };

  return {
    async start(options) {
      options.signal?.throwIfAborted();
      const { path: ffmpegPath } = await locate();
      const filters = await availableFilters(ffmpegPath);
      const markers = filters.has('zmq') && filters.has('drawbox');
      if (!markers && !warnedNoMarkers) {
        warnedNoMarkers = true;
        logger.warn({ ffmpegPath }, 'this ffmpeg has no zmq filter: videos are recorded without click markers');
      }
      return startRecording({ ...opts, ffmpegPath, markers }, options);
    },
  };
}

interface RecordingDeps extends FfmpegRecorderOptions {
  ffmpegPath: string;
  markers: boolean;
}

async function startRecording(deps: RecordingDeps, options: RecorderOptions): Promise<ActiveRecording> {
  const { fps, crf, ffmpegPath } = deps;
  const { session, outputPath, startedAtMs } = options;
  const log = deps.logger.child({ video: path.basename(outputPath) });
  const finishTimeoutMs = deps.finishTimeoutMs ?? 20_000;
  const finishMaxMs = Math.max(finishTimeoutMs, deps.finishMaxMs ?? 45_000);
  const killGraceMs = deps.killGraceMs ?? 3_000;

  await mkdir(path.dirname(outputPath), { recursive: true });
  // A private folder for the marker channel's Unix socket.
  const scratchDir = deps.markers ? await mkdtemp(path.join(os.tmpdir(), 'ew-video-')) : undefined;

  const pacer = createFramePacer<ScreencastFrame>({ fps, startedAtMs });
  const marks: ActionMark[] = [];
  const throttle = new AbortController();
  let encoder: EncoderProcess | undefined;
  let marker: ClickMarker | undefined;
  /** Once true, the marker channel was waited for (open, or given up): frames flow freely. */
  let markerReady = false;
  let screencast: Screencast | undefined;
  let outputScale = 1;
  let stopping = false;
  let endRequested = false;
  let encoderFailed = false;
  let mailbox: { frame: ScreencastFrame; done: () => void } | undefined;
  let mailboxDrops = 0;
  let framesEncoded = 0;
  /** Where the last tick, minus the lag, asked the timeline to be closed to (null: no tick waiting). */
  let tickUntilMs: number | null = null;
  /**
   * The end of the timeline, fixed the moment stop() is called. Work still queued then (a tick,
   * a frame) is done after it, possibly much later on a loaded machine: it must not take the
   * video past the end.
   */
  let endAtMs = Number.POSITIVE_INFINITY;
  let pumping: Promise<void> | undefined;
  let stopPromise: Promise<FinishedVideo | null> | undefined;

  const showMarker = (mark: ActionMark): void => {
    if (!marker || !mark.point) return;
    marker.show((mark.atMs - startedAtMs) / 1000, mark.point.x * outputScale, mark.point.y * outputScale);
  };
  /** The marker shows on the frames of [at, at + duration]: a frame where it starts and one just after it ends. */
  const keepMarkerSlots = (mark: ActionMark): void => {
    if (!mark.point || !deps.markers) return;
    const fromSlot = Math.ceil(((mark.atMs - startedAtMs) * fps) / 1000 - 1e-6);
    const toSlot = Math.floor(((mark.atMs - startedAtMs + MARKER_DURATION_MS) * fps) / 1000 + 1e-6) + 1;
    pacer.keep(Math.max(0, fromSlot));
    pacer.keep(Math.max(0, toSlot));
  };

  const launch = (frame: ScreencastFrame): void => {
    const width = Math.max(2, Math.floor(frame.width / 2) * 2);
    const height = Math.max(2, Math.floor(frame.height / 2) * 2);
    // Marks are in viewport CSS px; frames may be scaled (device pixel ratio, size caps).
    outputScale = session.viewport.width > 0 ? frame.width / session.viewport.width : 1;
    marker = scratchDir ? createClickMarker({ socketPath: path.join(scratchDir, 'zmq.sock'), logger: log }) : undefined;
    const started = startEncoder({ ffmpegPath, fps, crf, width, height, outputPath, ...(marker ? { extraFilters: marker.filters } : {}) });
    encoder = started;
    // The stream's header first; its frame size is only a hint (the scale filter decides).
    void started.write(mkvHeader({ width: frame.width, height: frame.height, frameDurationMs: 1000 / fps }));
    marker?.connect();
    for (const mark of marks) showMarker(mark);
    log.debug({ width, height, fps, crf }, 'encoder started');
    void started.exited.then((exit) => {
      if (endRequested) return;
      // ffmpeg died under a running execution: the run goes on without (the rest of) a video.
      encoderFailed = true;
      log.error({ err: exit.error ?? 'ffmpeg exited early' }, 'ffmpeg stopped during the run; the video will be partial or missing');
      void screencast?.stop().catch(() => undefined);
    });
  };

  /**
   * Holds back the frames of a marked moment until the marker channel is open: ffmpeg opens
   * it only after its first frames, and a command that arrives after the frames of its moment
   * would draw nothing. The first frame always passes, so ffmpeg can start.
   */
  const awaitMarkerFor = async (slot: number): Promise<void> => {
    if (!marker || markerReady || framesEncoded < MARKER_FREE_FRAMES) return;
    const slotEndSec = (slot + 1) / fps;
    if (!marks.some((m) => m.point && (m.atMs - startedAtMs) / 1000 < slotEndSec)) return;
    markerReady = true;
    if (!(await marker.whenReady())) log.debug({}, 'click markers unavailable for this video');
  };

  const writeFrames = async (writes: Array<PacedWrite<ScreencastFrame>>): Promise<void> => {
    for (const write of writes) {
      if (!encoder?.running) return;
      await awaitMarkerFor(write.slot);
      if (!encoder?.running) return;
      framesEncoded += 1;
      await encoder.write(mkvFrame(write.frame.data, (write.slot * 1000) / fps));
    }
  };

  const pumpLoop = async (): Promise<void> => {
    for (;;) {
      if (mailbox) {
        const { frame, done } = mailbox;
        mailbox = undefined;
        try {
          if (!encoder) launch(frame);
          await writeFrames(pacer.push(frame, Math.min(frame.timestampMs, endAtMs)));
        } finally {
          done();
        }
      } else if (tickUntilMs !== null) {
        const untilMs = Math.min(tickUntilMs, endAtMs);
        tickUntilMs = null;
        await writeFrames(pacer.advance(untilMs));
      } else {
        return;
      }
    }
  };

  const kick = (): Promise<void> => {
    pumping ??= pumpLoop()
      .catch((error: unknown) => log.error({ err: String(error) }, 'video frame pump failed'))
      .finally(() => (pumping = undefined));
    return pumping;
  };

  const taps = new Set<(frame: ScreencastFrame) => void>();

  const onFrame = async (raw: ScreencastFrame): Promise<void> => {
    if (stopping) return;
    const now = Date.now();
    const frame = Math.abs(raw.timestampMs - now) > MAX_CLOCK_SKEW_MS ? { ...raw, timestampMs: now } : raw;
    for (const tap of taps) {
      try {
        tap(frame);
      } catch (error) {
        log.warn({ err: String(error) }, 'screencast frame listener failed');
      }
    }
    if (encoderFailed) return;
    await new Promise<void>((resolve) => {
      if (mailbox) {
        mailboxDrops += 1;
        mailbox.done();
      }
      mailbox = { frame, done: resolve };
      void kick();
    });
    // Acknowledge no sooner than the end of this frame's slot: any frame Chromium painted
    // before then would be dropped by the pacer anyway, so it need not encode it.
    const slot = Math.max(0, Math.floor(((frame.timestampMs - startedAtMs) * fps) / 1000));
    const waitMs = Math.min(1000 / fps, slotStartMs(slot + 1, fps, startedAtMs) - Date.now());
    if (waitMs > 1 && !stopping) {
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          throttle.signal.removeEventListener('abort', wake);
          resolve();
        };
        const timer = setTimeout(wake, waitMs);
        throttle.signal.addEventListener('abort', wake);
      });
    }
  };

  const ticker = setInterval(() => {
    // The time is read now: the pump may get to it much later.
    tickUntilMs = Date.now() - STILL_LAG_MS;
    void kick();
  }, STILL_TICK_MS);
  ticker.unref();

  const cleanup = async (): Promise<void> => {
    clearInterval(ticker);
    marker?.close();
    if (scratchDir) await rm(scratchDir, { recursive: true, force: true }).catch(() => undefined);
  };

  const finish = async (endedAtMs: number): Promise<FinishedVideo | null> => {
    const stopStartedMs = Date.now();
    endAtMs = endedAtMs;
    stopping = true;
    clearInterval(ticker);
    throttle.abort();
    // Graceful end, then signals once ffmpeg stops making progress (or at the cap); every wait
    // below ends when ffmpeg exits. Killing an encoder that is only slow loses the video.
    const unwatch = watchFinish(
      { cpuTicks: () => encoder?.cpuTicks(), kill: (signal) => encoder?.kill(signal) },
      { idleMs: finishTimeoutMs, maxMs: finishMaxMs, killGraceMs },
      (event, fields) => {
        if (event === 'waiting') log.info(fields, 'ffmpeg is still finishing the video (the machine is busy); waiting');
        else if (event === 'kill') log.warn(fields, 'ffmpeg ignored SIGTERM: SIGKILL');
        else log.warn(fields, fields.working ? 'ffmpeg did not finish within the cap: SIGTERM' : 'ffmpeg made no progress finishing: SIGTERM');
      },
    );
    try {
      // No frame after the end of the timeline. A crashed browser may fail this: the frames
      // already received are what there is.
      await screencast?.stop().catch((error: unknown) => log.debug({ err: String(error) }, 'screencast stop failed'));
      await kick();
      if (!encoder) {
        log.warn({ reason: 'no screencast frame arrived' }, 'no video: the browser never sent a frame');
        return null;
      }
      await writeFrames(pacer.finish(endedAtMs));
      endRequested = true;
      marker?.ending();
      encoder.end();
      const exit = await encoder.exited;
      const droppedFrames = pacer.stats.framesDropped + mailboxDrops;
      const result: FinishedVideo = { path: outputPath, durationMs: (pacer.stats.slotsClosed * 1000) / fps, frames: framesEncoded, droppedFrames };
      if (exit.ok && !encoderFailed) {
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
      if (encoder?.running) {
        endRequested = true;
        encoder.end();
        encoder.kill('SIGKILL');
      }
      await cleanup();
    }
  };

  try {
    screencast = await session.startScreencast({ maxWidth: session.viewport.width, maxHeight: session.viewport.height, quality: deps.jpegQuality ?? 70 }, onFrame);
  } catch (error) {
    stopping = true;
    await cleanup();
    throw error;
  }

  return {
    mark(mark) {
      marks.push({ ...mark, ...(mark.point ? { point: { ...mark.point } } : {}) });
      showMarker(mark);
      keepMarkerSlots(mark);
    },
    stop(endedAtMs) {
      stopPromise ??= finish(endedAtMs ?? Date.now());
      return stopPromise;
    },
    stepsVtt() {
      return buildStepsVtt(marks, startedAtMs);
    },
    tap(listener) {
      taps.add(listener);
      return () => taps.delete(listener);
    },
  };
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
