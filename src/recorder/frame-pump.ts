import { setTimeout as delay } from 'node:timers/promises';
import type { ScreencastFrame } from '../browser/types.js';
import type { Logger } from '../telemetry/types.js';
import type { EncoderProcess } from './ffmpeg-process.js';
import { createFramePacer, slotStartMs, type PacedWrite } from './frame-pacer.js';

/**
 * The recorder's frame pump: screencast frames → a one-place mailbox → the pacer → ffmpeg's
 * stdin, one Matroska cluster per frame (docs/counters-and-artifacts.md#videomp4).
 *
 * `offer` settles when its frame was written and the pipe drained (or when a newer frame
 * replaced it in the mailbox, which drops it), and no sooner than the end of the frame's slot:
 * the screencast acknowledges the frame then, so Chromium sends the next one. A slow ffmpeg
 * therefore slows Chromium's frames instead of growing a buffer. `tick` closes the slots of a
 * still page, so the last frame painted reaches ffmpeg within a tick even when nothing else is.
 * One loop does all the writing, in order; it runs while there is work and stops when there is none.
 */

export interface FramePumpOptions {
  fps: number;
  /** Wall-clock start of the timeline (epoch ms). */
  startedAtMs: number;
  log: Logger;
  /** Starts the encoder for the first frame (its size decides the video's). */
  launch(frame: ScreencastFrame): EncoderProcess;
  /**
   * Awaited before each frame is written, with the slot it is written at and the frames
   * written so far (the click markers hold back the frames of a marked moment until ffmpeg's
   * command channel is open).
   */
  beforeWrite(slot: number, framesEncoded: number): Promise<void>;
}

export interface FramePump {
  /** A frame from the screencast; settles when the screencast may acknowledge it. */
  offer(frame: ScreencastFrame): Promise<void>;
  /** Asks for the slots that ended before `untilMs` (read now) to be closed. */
  tick(untilMs: number): void;
  /** Asks for the picture of `slot` to be written even if unchanged (the pacer's `keep`). */
  keep(slot: number): void;
  /**
   * Fixes the end of the timeline and stops holding frames back to their slot's end. Work still
   * queued (a tick, a frame), possibly done much later on a loaded machine, never takes the
   * video past `endAtMs`.
   */
  end(endAtMs: number): void;
  /** Resolves once the queued work is written. */
  drain(): Promise<void>;
  /** Writes the timeline's last slots, up to `endedAtMs`. */
  finish(endedAtMs: number): Promise<void>;
  /** The encoder, once the first frame started it. */
  readonly encoder: EncoderProcess | undefined;
  /** Frames written to ffmpeg, and frames dropped on the way (by the pacer or the mailbox). */
  readonly framesEncoded: number;
  readonly framesDropped: number;
  /** The timeline's length so far. */
  readonly durationMs: number;
}

export function createFramePump(opts: FramePumpOptions): FramePump {
  const { fps, startedAtMs, log } = opts;
  const pacer = createFramePacer<ScreencastFrame>({ fps, startedAtMs });
  const throttle = new AbortController();
  let encoder: EncoderProcess | undefined;
  let mailbox: { frame: ScreencastFrame; done: () => void } | undefined;
  let mailboxDrops = 0;
  let framesEncoded = 0;
  /** Where the last tick asked the timeline to be closed to (null: no tick waiting). */
  let tickUntilMs: number | null = null;
  let endAtMs = Number.POSITIVE_INFINITY;
  let ended = false;
  let pumping: Promise<void> | undefined;

  const writeFrames = async (writes: Array<PacedWrite<ScreencastFrame>>): Promise<void> => {
    for (const write of writes) {
      if (!encoder?.running) return;
      await opts.beforeWrite(write.slot, framesEncoded);
      if (!encoder?.running) return;
      framesEncoded += 1;
      await encoder.writeFrame(write.frame.data, (write.slot * 1000) / fps);
    }
  };

  const pumpLoop = async (): Promise<void> => {
    for (;;) {
      if (mailbox) {
        const { frame, done } = mailbox;
        mailbox = undefined;
        try {
          encoder ??= opts.launch(frame);
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

  return {
    async offer(frame) {
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
      if (waitMs > 1 && !ended) {
        // Cut short (an AbortError, the wait's only failure) when the recording ends: no slot is
        // left to wait for then.
        await delay(waitMs, undefined, { signal: throttle.signal }).catch(() => undefined);
      }
    },
    tick(untilMs) {
      tickUntilMs = untilMs;
      void kick();
    },
    keep(slot) {
      pacer.keep(slot);
    },
    end(at) {
      endAtMs = at;
      ended = true;
      throttle.abort();
    },
    drain: kick,
    finish: (endedAtMs) => writeFrames(pacer.finish(endedAtMs)),
    get encoder() {
      return encoder;
    },
    get framesEncoded() {
      return framesEncoded;
    },
    get framesDropped() {
      return pacer.stats.framesDropped + mailboxDrops;
    },
    get durationMs() {
      return (pacer.stats.slotsClosed * 1000) / fps;
    },
  };
}
