/**
 * Places timestamped frames on a constant-frame-rate timeline (pure, no I/O).
 *
 * Chromium sends a screencast frame only when the page repaints, so frames arrive at irregular
 * times: many per second during an animation, none for minutes on a still page. The encoder's
 * input runs at a constant rate, so slot k of the video (time k/fps after the start) shows the
 * last frame painted before the slot ended: the held frame is repeated across still periods,
 * and when several frames fall in one slot only the last is kept (the others are dropped).
 * The video's duration is then the wall time, and an action at second t is seen at second t.
 *
 * Slots are written lazily: a frame is written for the slots that closed before the next frame
 * arrived, when `advance()` says time has passed (still periods while the run goes), or when
 * `finish()` closes the timeline.
 */

export interface PacedWrite<T> {
  /** The frame to hand the encoder… */
  frame: T;
  /** …this many times in a row (one per slot). */
  count: number;
}

export interface PacerStats {
  /** Frames given to the pacer. */
  framesIn: number;
  /** Frames that never made it into a slot (another frame took their slot). */
  framesDropped: number;
  /** Slots written so far: the video's frame count. */
  slotsWritten: number;
}

export interface FramePacer<T> {
  /** A frame painted at `timestampMs` (epoch ms). Returns what to write now, if anything. */
  push(frame: T, timestampMs: number): PacedWrite<T> | null;
  /** Fills the slots that ended before `untilMs` with the held frame (still periods). */
  advance(untilMs: number): PacedWrite<T> | null;
  /** Ends the timeline at `endedAtMs`: the held frame fills every remaining slot. Idempotent. */
  finish(endedAtMs: number): PacedWrite<T> | null;
  /** Whether any frame has arrived. */
  readonly hasFrame: boolean;
  readonly stats: Readonly<PacerStats>;
}

export function createFramePacer<T>(options: { fps: number; startedAtMs: number }): FramePacer<T> {
  const { fps, startedAtMs } = options;
  if (!(fps > 0)) throw new RangeError(`fps must be positive, got ${fps}`);
  const slotMs = 1000 / fps;
  const stats: PacerStats = { framesIn: 0, framesDropped: 0, slotsWritten: 0 };

  let held: T | undefined;
  let heldWritten = false;
  let finished = false;

  // Index of the slot an instant falls in; instants before the start go to slot 0, so the
  // first frame also covers the moments before it (there is nothing better to show).
  const slotOf = (ms: number): number => Math.max(0, Math.floor((ms - startedAtMs) / slotMs));

  /** Writes the held frame up to (not including) slot `endSlot`. */
  const fillTo = (endSlot: number): PacedWrite<T> | null => {
    if (held === undefined || endSlot <= stats.slotsWritten) return null;
    const count = endSlot - stats.slotsWritten;
    stats.slotsWritten = endSlot;
    heldWritten = true;
    return { frame: held, count };
  };

  return {
    get hasFrame() {
      return held !== undefined;
    },
    stats,
    push(frame, timestampMs) {
      if (finished) return null;
      stats.framesIn += 1;
      // The held frame shows until the slot this frame falls in.
      const write = fillTo(slotOf(timestampMs));
      if (held !== undefined && !heldWritten) stats.framesDropped += 1;
      held = frame;
      heldWritten = false;
      return write;
    },
    advance(untilMs) {
      if (finished) return null;
      // Only slots that are entirely over: slot k ends at (k + 1) * slotMs.
      return fillTo(Math.max(0, Math.floor((untilMs - startedAtMs) / slotMs)));
    },
    finish(endedAtMs) {
      if (finished) return null;
      finished = true;
      if (held === undefined) return null;
      const endSlot = Math.max(Math.round((endedAtMs - startedAtMs) / slotMs), stats.slotsWritten + (heldWritten ? 0 : 1));
      return fillTo(endSlot);
    },
  };
}

/** Wall-clock time (epoch ms) at which slot `slot` of a timeline starts. */
export function slotStartMs(slot: number, fps: number, startedAtMs: number): number {
  return startedAtMs + (slot * 1000) / fps;
}
