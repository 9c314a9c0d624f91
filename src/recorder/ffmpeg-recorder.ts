import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Screencast, ScreencastFrame } from '../browser/types.js';
import type { Logger } from '../telemetry/types.js';
import { createEncoderPool, type EncoderPool } from './encoder-pool.js';
import type { EncoderLease } from './shared-encoder.js';
import { availableFilters, startEncoder, type EncoderProcess } from './ffmpeg-process.js';
import { resolveFfmpegPath, type FfmpegLocation } from './ffmpeg-path.js';
import { createFramePump } from './frame-pump.js';
import { mkvHeader } from './mkv-stream.js';
import { finishRecording, type EncoderState } from './recording-finish.js';
import { createRecordingMarks } from './recording-marks.js';
import type { ActiveRecording, FinishedVideo, RecorderOptions, VideoRecorder } from './types.js';

/**
 * The video recorder: the session's screencast, paced onto the wall-clock timeline, encoded
 * to H.264 by one single-threaded ffmpeg while the run goes (docs/counters-and-artifacts.md#videomp4).
 *
 * Flow of a frame: Chromium paints → the adapter calls `onFrame` → the frame waits in a
 * one-place mailbox → the pump (frame-pump.ts) gives it to the pacer, which says which earlier frame to write
 * and at which time → the bytes go to ffmpeg's stdin, one Matroska cluster per frame → when
 * the pipe drains (and the frame's slot is over) `onFrame` settles and the adapter
 * acknowledges the frame, so Chromium sends the next one. A slow ffmpeg therefore slows
 * Chromium's frames instead of growing a buffer, and a frame that finds the mailbox full
 * replaces the one waiting there (that one is dropped).
 *
 * Only frames that change the picture are encoded, to keep the encoder's CPU low
 * (docs/operations.md#capacity-figures): a frame lasts until the next
 * one, so a page that stays still while the model thinks costs ffmpeg nothing; click markers
 * ask the pacer for a frame at the start and the end of their window.
 *
 * The ffmpeg is the recording's own (`per-execution`), or a warm one leased from the
 * recorder's pool (`shared`, encoder-pool.ts and shared-encoder.ts), whose lease stands for the
 * process in the steps above and writes the recording's MP4 when it ends.
 */

export interface FfmpegRecorderOptions {
  /** ffmpeg binary (`FFMPEG_PATH`); empty tries `PATH`, then the `ffmpeg-static` package. */
  ffmpegPath?: string;
  /** Video frame rate (`VIDEO_FPS`). */
  fps: number;
  /** x264 CRF (`VIDEO_CRF`): lower is better quality and bigger files. */
  crf: number;
  /** `VIDEO_MAX_BITRATE`, bits a second: the encoder's ceiling (default 2 Mbit/s). */
  maxBitrate?: number;
  /**
   * `VIDEO_MAX_BYTES`: once the file holds this much the recording ends there, its file finalised
   * and playable, while the run goes on. Measured every second (the MP4 ffmpeg writes), and with
   * each frame for a shared encoder (its packets); what ffmpeg still holds then is added to the
   * file as it finishes. Default none.
   */
  maxBytes?: number;
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
  /**
   * `VIDEO_ENCODER`, whose default (`shared`) the worker always passes
   * (docs/operations.md#shared-video-encoder). `shared`: warm encoders reused by recordings one
   * after another, each recording's MP4 cut from their stream; `close()` ends them.
   * `per-execution`: one ffmpeg per recording, writing the MP4 itself; a recorder made without
   * this option (tests, benchmarks) works this way.
   */
  encoder?: 'shared' | 'per-execution';
  /** How long a shared encoder may sit unused before it is ended. Default 60 s. */
  encoderIdleMs?: number;
}

/**
 * Slots are closed this long after the fact: a frame painted just before now may still be on
 * its way, and the slot it belongs to should not be closed with the older frame.
 */
const STILL_LAG_MS = 500;
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
  const pool = opts.encoder === 'shared' ? createEncoderPool({ logger, idleMs: opts.encoderIdleMs ?? 60_000 }) : undefined;

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
      return startRecording({ ...opts, ffmpegPath, markers, ...(pool ? { pool } : {}) }, options);
    },
    async close() {
      await pool?.close();
    },
  };
}

interface RecordingDeps extends FfmpegRecorderOptions {
  ffmpegPath: string;
  markers: boolean;
  /** The shared encoders, when recordings use them. */
  pool?: EncoderPool;
}

/**
 * One recording, wired from its parts: the frame pump (frame-pump.ts), the marks and the
 * click markers' channel (recording-marks.ts), and the end (recording-finish.ts).
 */
async function startRecording(deps: RecordingDeps, options: RecorderOptions): Promise<ActiveRecording> {
  const { fps, crf, ffmpegPath, maxBitrate } = deps;
  const { session, outputPath, startedAtMs } = options;
  const log = deps.logger.child({ video: path.basename(outputPath) });
  const finishTimeoutMs = deps.finishTimeoutMs ?? 20_000;
  const limits = { idleMs: finishTimeoutMs, maxMs: Math.max(finishTimeoutMs, deps.finishMaxMs ?? 45_000), killGraceMs: deps.killGraceMs ?? 3_000 };

  await mkdir(path.dirname(outputPath), { recursive: true });
  const state: EncoderState = { endRequested: false, failed: false };
  let screencast: Screencast | undefined;
  let stopping = false;
  let stopPromise: Promise<FinishedVideo | null> | undefined;
  /** The video ended at VIDEO_MAX_BYTES: its end, while the screencast still feeds the taps (the live view). */
  let endedAtLimit: Promise<FinishedVideo | null> | undefined;
  let lease: EncoderLease | undefined;
  // The pump is created below; marks only reach it once a mark is added (after start).
  const marks = await createRecordingMarks({ markers: deps.markers, sharedEncoder: deps.pool !== undefined, fps, startedAtMs, log, keep: (slot) => pump.keep(slot) });

  const watchExit = (started: EncoderProcess): void => {
    void started.exited.then((exit) => {
      if (state.endRequested) return;
      // ffmpeg died under a running execution: the run goes on without (the rest of) a video.
      state.failed = true;
      log.error({ err: exit.error ?? 'ffmpeg exited early' }, 'ffmpeg stopped during the run; the video will be partial or missing');
      // The video is lost already (said above); a screencast that cannot stop has a page gone with it.
      void screencast?.stop().catch(() => undefined);
    });
  };
  const launch = (frame: ScreencastFrame): EncoderProcess => {
    const width = Math.max(2, Math.floor(frame.width / 2) * 2);
    const height = Math.max(2, Math.floor(frame.height / 2) * 2);
    // Marks are in viewport CSS px; frames may be scaled (device pixel ratio, size caps).
    const scale = session.viewport.width > 0 ? frame.width / session.viewport.width : 1;
    if (deps.pool) {
      lease = deps.pool.lease({ ffmpegPath, fps, crf, width, height, markers: deps.markers, ...(maxBitrate !== undefined ? { maxBitrate } : {}) }, outputPath, log);
      marks.share(lease.marker, scale, lease.offsetMs);
      log.debug({ width, height, fps, crf, offsetMs: lease.offsetMs }, 'shared encoder leased');
      watchExit(lease);
      return lease;
    }
    const extraFilters = marks.filters(scale);
    const started = startEncoder({ ffmpegPath, fps, crf, width, height, outputPath, ...(maxBitrate !== undefined ? { maxBitrate } : {}), ...(extraFilters.length > 0 ? { extraFilters } : {}) });
    // The stream's header first; its frame size is only a hint (the scale filter decides).
    void started.write(mkvHeader({ width: frame.width, height: frame.height, frameDurationMs: 1000 / fps }));
    marks.connect();
    log.debug({ width, height, fps, crf }, 'encoder started');
    watchExit(started);
    return started;
  };
  const pump = createFramePump({ fps, startedAtMs, log, launch, beforeWrite: (slot, framesEncoded) => marks.beforeWrite(slot, framesEncoded) });

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
    if (state.failed || endedAtLimit) return;
    await pump.offer(frame);
    // The shared encoder's packets are counted as they come: checked with each frame, not each second.
    if (lease && deps.maxBytes !== undefined && lease.encodedBytes >= deps.maxBytes) void checkSize(deps.maxBytes);
  };

  /** Bytes of video so far: the shared encoder's packets, or the MP4 ffmpeg is writing. */
  const videoBytes = async (): Promise<number> => (lease ? lease.encodedBytes : pump.encoder ? await stat(outputPath).then((s) => s.size, () => 0) : 0);
  let measuring = false;
  /** Ends the video once it holds VIDEO_MAX_BYTES; the run, the screencast and its taps go on. */
  const checkSize = async (maxBytes: number): Promise<void> => {
    if (measuring || stopping || endedAtLimit || state.failed) return;
    measuring = true;
    try {
      const bytes = await videoBytes();
      if (bytes < maxBytes || stopping || endedAtLimit) return;
      const atMs = Date.now();
      const reached = { limit: 'VIDEO_MAX_BYTES', max: maxBytes, value: bytes, unit: 'bytes', action: 'stopped', detail: `the video ends ${Math.round((atMs - startedAtMs) / 1000)} s into the run` } as const;
      // The run logs it with its own (onLimit); a recording without one logs it here.
      if (options.onLimit) options.onLimit({ ...reached });
      else log.warn({ ...reached }, 'resource limit reached: VIDEO_MAX_BYTES; the video ends here');
      clearInterval(ticker);
      // The screencast goes on while the live view takes its frames (stop() ends it); with no
      // taps nothing needs it, and Chromium stops painting frames for it now.
      endedAtLimit = finishRecording({ pump, marks, screencast: taps.size > 0 ? undefined : screencast, state, outputPath, limits, log }, atMs).then((video) => (video ? { ...video, stoppedAtLimit: { limit: 'VIDEO_MAX_BYTES' as const, maxBytes, bytes } } : null));
    } finally {
      measuring = false;
    }
  };

  // The time is read now: the pump may get to it much later.
  const ticker = setInterval(() => {
    pump.tick(Date.now() - STILL_LAG_MS);
    if (deps.maxBytes !== undefined) void checkSize(deps.maxBytes);
  }, STILL_TICK_MS);
  ticker.unref();
  const cleanup = async (): Promise<void> => {
    clearInterval(ticker);
    await marks.close();
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
      // A video ended at its limit takes no more marks: its track ends with it, and a shared
      // encoder's marker channel may be another recording's by now.
      if (!endedAtLimit) marks.add(mark);
    },
    stop(endedAtMs) {
      stopPromise ??= (async () => {
        stopping = true;
        clearInterval(ticker);
        try {
          if (endedAtLimit) {
            await screencast?.stop().catch((error: unknown) => log.debug({ err: String(error) }, 'screencast stop failed'));
            return await endedAtLimit;
          }
          return await finishRecording({ pump, marks, screencast, state, outputPath, limits, log }, endedAtMs ?? Date.now());
        } finally {
          await cleanup();
        }
      })();
      return stopPromise;
    },
    stepsVtt() {
      return marks.stepsVtt();
    },
    tap(listener) {
      taps.add(listener);
      return () => taps.delete(listener);
    },
  };
}
