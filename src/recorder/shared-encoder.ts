import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../telemetry/types.js';
import { createClickMarker, type ClickMarker } from './click-marker.js';
import { startEncoder, type EncoderExit, type EncoderProcess } from './ffmpeg-process.js';
import { createFlvReader } from './flv-reader.js';
import { mkvFrame, mkvHeader } from './mkv-stream.js';
import { writeMp4, type AccessUnit } from './mp4-writer.js';

/**
 * One warm ffmpeg that encodes the videos of recordings one after another
 * (docs/operations.md#shared-video-encoder): starting Debian's ffmpeg costs more CPU than
 * encoding a short run, so a worker keeps one per slot instead of one per execution.
 *
 * It reads one endless Matroska stream of JPEG frames (mkv-stream.ts) and writes H.264 packets
 * with their times as FLV on stdout (flv-reader.ts), each as soon as its frame went in (no
 * lookahead, no B-frames). A recording leases the encoder: its frames go on the stream from a
 * whole second at least 10 s after the previous recording's last frame (so its first frame is
 * a keyframe, see `buildEncoderArgs`), and when it ends, its packets become its own MP4
 * (mp4-writer.ts), times shifted back to its start. Click markers keep working: the encoder
 * owns the command channel and a recording shows its markers at its offset.
 *
 * Started as the per-execution encoder is (fluent-ffmpeg, `startEncoder` in ffmpeg-process.ts),
 * with its stdout handed to us instead of an MP4 file. If it dies, the lease running then fails
 * (that recording has no video) and the next recording starts a new one. The worker ends it when
 * it stops (the recorder's `close`).
 */

export interface SharedEncoderSpec {
  ffmpegPath: string;
  width: number;
  height: number;
  fps: number;
  crf: number;
  /** Whether this ffmpeg draws click markers (has the zmq and drawbox filters). */
  markers: boolean;
  /** VIDEO_MAX_BITRATE, bits a second (ffmpeg-process.ts's default when absent). */
  maxBitrate?: number;
  logger: Logger;
}

/** A recording's use of the shared encoder: an `EncoderProcess` whose `end()` writes its MP4. */
export interface EncoderLease extends EncoderProcess {
  /** Where the recording's timeline starts on the encoder's stream (a whole second). */
  readonly offsetMs: number;
  /** The encoder's click-marker channel, shared by its recordings (undefined without markers). */
  readonly marker: ClickMarker | undefined;
  /** Bytes of H.264 the recording has so far: about what its MP4 will hold (VIDEO_MAX_BYTES). */
  readonly encodedBytes: number;
}

export interface SharedEncoder {
  readonly key: string;
  /** Running, not closing, and not retired (its stream too long). */
  readonly usable: boolean;
  /** A recording holds it. */
  readonly busy: boolean;
  /** Takes the encoder for a recording that writes its MP4 to `outputPath`. */
  lease(outputPath: string, log: Logger): EncoderLease;
  /** Ends ffmpeg (its stdin closed; SIGKILL after a grace); resolves when it has exited. */
  close(): Promise<void>;
  /** Called whenever the encoder becomes idle (`released`) or exits (`exited`). */
  onChange(listener: (event: 'released' | 'exited') => void): void;
}

/** Seconds between one recording's last frame and the next one's first: the keyframe rule's interval. */
const KEYFRAME_GAP_SEC = 10;
const CLOSE_GRACE_MS = 5_000;
/**
 * An encoder whose stream has run this long is retired after its recording (a new one takes
 * over): FLV's times are 32-bit milliseconds, which end after 49 days.
 */
const MAX_STREAM_SEC = 7 * 86_400;

export function encoderKey(spec: Pick<SharedEncoderSpec, 'width' | 'height' | 'fps' | 'crf' | 'markers' | 'maxBitrate'>): string {
  return `${spec.width}x${spec.height}@${spec.fps}/crf${spec.crf}/${spec.markers ? 'markers' : 'plain'}${spec.maxBitrate !== undefined ? `/max${spec.maxBitrate}` : ''}`;
}

export function startSharedEncoder(spec: SharedEncoderSpec): SharedEncoder {
  const { fps, width, height } = spec;
  const slotMs = 1000 / fps;
  const log = spec.logger.child({ encoder: encoderKey(spec) });
  const scratchDir = spec.markers ? mkdtempSync(path.join(os.tmpdir(), 'ew-encoder-')) : undefined;
  const marker = scratchDir ? createClickMarker({ socketPath: path.join(scratchDir, 'zmq.sock'), logger: log }) : undefined;
  let alive = true;
  let closing = false;
  let avcc: Buffer | undefined;
  /** The next recording's first slot on the stream: a whole second, after the gap. */
  let nextStartSec = 0;
  let current: ReturnType<typeof createLease> | undefined;
  const listeners: Array<(event: 'released' | 'exited') => void> = [];

  const read = createFlvReader();
  const encoder: EncoderProcess = startEncoder({ ...spec, outputPath: 'pipe:1', ...(marker ? { extraFilters: marker.filters } : {}) }, (data) => {
    try {
      for (const item of read(data)) {
        if (item.kind === 'config') avcc = item.avcc;
        else current?.packet(item.ptsMs, item.key, item.data);
      }
    } catch (error) {
      log.error({ err: error }, 'unreadable output from the shared encoder; stopping it');
      encoder.kill('SIGKILL');
    }
  });
  // Settles once the packets ffmpeg wrote before exiting have been read (`startEncoder`).
  const exited = encoder.exited.then((exit) => {
    alive = false;
    const error = exit.error ?? 'ffmpeg exited';
    if (!closing) log.warn({ err: error }, 'shared video encoder stopped');
    current?.fail(error);
    marker?.close();
    if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
    for (const listener of listeners) listener('exited');
  });

  // The stream's header once; its frame size is only a hint (the scale filter decides).
  void encoder.write(mkvHeader({ width, height, frameDurationMs: slotMs }));
  marker?.connect();
  log.debug({ width, height, fps, crf: spec.crf }, 'shared video encoder started');

  function createLease(outputPath: string, leaseLog: Logger) {
    const offsetMs = nextStartSec * 1000;
    const units: AccessUnit[] = [];
    let encodedBytes = 0;
    /** The last frame written, on the recording's timeline (ms); undefined before the first. */
    let lastMs: number | undefined;
    let ending = false;
    /** The packets are complete and being written as an MP4: the encoder's fate no longer matters. */
    let muxing = false;
    let settled = false;
    let resolveExit!: (exit: EncoderExit) => void;
    const leaseExited = new Promise<EncoderExit>((resolve) => (resolveExit = resolve));

    const release = (exit: EncoderExit): void => {
      if (settled) return;
      settled = true;
      if (current === lease) current = undefined;
      if (lastMs !== undefined) nextStartSec = Math.ceil((offsetMs + lastMs) / 1000 + KEYFRAME_GAP_SEC + 1 / fps);
      resolveExit(exit);
      if (alive) for (const listener of listeners) listener('released');
    };
    /** Once the last frame's packet is out, the recording's packets become its MP4. */
    const finishIfComplete = (): void => {
      if (!ending || settled || muxing || lastMs === undefined) return;
      const last = units.at(-1);
      if (!last || last.ptsMs < lastMs - slotMs / 2) return;
      if (!avcc) return release({ ok: false, error: 'the encoder gave no H.264 configuration' });
      const first = units.findIndex((unit) => unit.key);
      if (first > 0) leaseLog.warn({ skipped: first }, 'the recording did not start on a keyframe; its first frames are left out');
      muxing = true;
      writeMp4(outputPath, { avcc, width, height, units: first < 0 ? [] : units.slice(first), endMs: lastMs + slotMs }).then(
        () => release({ ok: true }),
        (error: unknown) => release({ ok: false, error: `could not write the MP4: ${String(error)}` }),
      );
    };

    const lease = {
      offsetMs,
      marker,
      exited: leaseExited,
      get encodedBytes() {
        return encodedBytes;
      },
      get running() {
        return !settled && !muxing && alive;
      },
      write: (chunk: Buffer) => (settled ? Promise.resolve() : encoder.write(chunk)),
      writeFrame(jpeg: Buffer, timestampMs: number) {
        if (settled || ending) return Promise.resolve();
        lastMs = Math.round(timestampMs);
        return encoder.write(mkvFrame(jpeg, offsetMs + timestampMs));
      },
      end() {
        if (ending) return;
        ending = true;
        if (lastMs === undefined) release({ ok: false, error: 'no frame was written' });
        else finishIfComplete();
      },
      kill(signal: NodeJS.Signals) {
        // A stuck encoder: ending it is the only way out (the next recording gets a new one).
        if (!settled && !muxing && alive) encoder.kill(signal);
      },
      cpuTicks: () => (alive ? encoder.cpuTicks() : undefined),
      packet(ptsMs: number, key: boolean, data: Buffer) {
        // Packets before this recording's start are the previous one's (none once it ended well).
        if (settled || muxing || ptsMs < offsetMs - slotMs / 2) return;
        units.push({ ptsMs: Math.max(0, Math.round(ptsMs - offsetMs)), key, data });
        encodedBytes += data.length;
        finishIfComplete();
      },
      fail(error: string) {
        if (!muxing) release({ ok: false, error });
      },
    };
    return lease;
  }

  return {
    key: encoderKey(spec),
    get usable() {
      return alive && !closing && nextStartSec < MAX_STREAM_SEC;
    },
    get busy() {
      return current !== undefined;
    },
    lease(outputPath, leaseLog) {
      if (current || !alive || closing) throw new Error('the shared encoder is not free');
      current = createLease(outputPath, leaseLog);
      return current;
    },
    async close() {
      if (alive && !closing) {
        closing = true;
        marker?.ending();
        encoder.end();
        const timer = setTimeout(() => encoder.kill('SIGKILL'), CLOSE_GRACE_MS);
        timer.unref();
        await exited;
        clearTimeout(timer);
      }
      await exited;
    },
    onChange(listener) {
      listeners.push(listener);
    },
  };
}
