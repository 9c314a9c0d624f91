/**
 * Places timestamped frames on the video's timeline (pure, no I/O).
 *
 * Chromium sends a screencast frame only when the page repaints, so frames arrive at irregular
 * times: many per second during an animation, none for minutes on a still page. The timeline is
 * cut in slots of 1/fps seconds; slot k shows the last frame painted before the slot ended. A
 * frame is written once, at the start of the first slot it shows in, and lasts until the next
 * frame written (the video is variable-rate): a still period costs nothing to encode, and an
 * action at second t is still seen at second t. When several frames fall in one slot only the
 * last is kept (the others are dropped), so there are never more than fps frames a second.
 *
 * Besides those, the picture of a slot named with `keep()` is written again even if it did not
 * change: a click marker is drawn on the frames of its time window, so the window's first slot
 * and the first slot after it need a frame of their own.
 *
 * Slots are closed lazily: when the next frame arrives, when `advance()` says time has passed,
 * or when `finish()` ends the timeline, which writes its last slot so the video lasts until then.
 */

export interface PacedWrite<T> {
  frame: T;
  /** The slot whose start is the frame's time on the timeline (slot / fps seconds). */
  slot: number;
}

export interface PacerStats {
  /** Frames given to the pacer. */
  framesIn: number;
  /** Frames that never made it into a slot (another frame took their slot). */
  framesDropped: number;
  /** Frames written (a kept slot writes a frame again). */
  framesWritten: number;
  /** Slots closed so far: the timeline's length, in slots. */
  slotsClosed: number;
}

export interface FramePacer<T> {
  /** A frame painted at `timestampMs` (epoch ms). Returns what to write now. */
  push(frame: T, timestampMs: number): Array<PacedWrite<T>>;
  /** Closes the slots that ended before `untilMs`. */
  advance(untilMs: number): Array<PacedWrite<T>>;
  /** Asks for the picture of `slot` to be written even if unchanged; ignored once the slot closed. */
  keep(slot: number): void;
  /** Ends the timeline at `endedAtMs`. Idempotent. */
  finish(endedAtMs: number): Array<PacedWrite<T>>;
  /** Whether any frame has arrived. */
  readonly hasFrame: boolean;
  readonly stats: Readonly<PacerStats>;
}

export function createFramePacer<T>(options: { fps: number; startedAtMs: number }): FramePacer<T> {
  const { fps, startedAtMs } = options;
  if (!(fps > 0)) throw new RangeError(`fps must be positive, got ${fps}`);
  const slotMs = 1000 / fps;
  const stats: PacerStats = { framesIn: 0, framesDropped: 0, framesWritten: 0, slotsClosed: 0 };

  let held: T | undefined;
  let heldWritten = false;
  let lastWrittenSlot = -1;
  let finished = false;
  /** Slots to write even when their picture did not change, ascending. */
  let kept: number[] = [];

  // Index of the slot an instant falls in; instants before the start go to slot 0, so the
  // first frame also covers the moments before it (there is nothing better to show).
  const slotOf = (ms: number): number => Math.max(0, Math.floor((ms - startedAtMs) / slotMs));

  const write = (slot: number, writes: Array<PacedWrite<T>>): void => {
    writes.push({ frame: held as T, slot });
    heldWritten = true;
    lastWrittenSlot = slot;
    stats.framesWritten += 1;
  };

  /** Closes the slots before `endSlot`: the held frame shows in all of them. */
  const closeTo = (endSlot: number): Array<PacedWrite<T>> => {
    const writes: Array<PacedWrite<T>> = [];
    if (held === undefined || endSlot <= stats.slotsClosed) return writes;
    // A frame shows from the first slot not yet closed (a late frame joins the timeline there).
    if (!heldWritten) write(stats.slotsClosed, writes);
    for (const slot of kept) if (slot < endSlot && slot > lastWrittenSlot) write(slot, writes);
    kept = kept.filter((slot) => slot >= endSlot);
    stats.slotsClosed = endSlot;
    return writes;
  };

  return {
    get hasFrame() {
      return held !== undefined;
    },
    stats,
    push(frame, timestampMs) {
      if (finished) return [];
      stats.framesIn += 1;
      // The held frame shows until the slot this frame falls in.
      const writes = closeTo(slotOf(timestampMs));
      if (held !== undefined && !heldWritten) stats.framesDropped += 1;
      held = frame;
      heldWritten = false;
      return writes;
    },
    advance(untilMs) {
      if (finished) return [];
      // Only slots that are entirely over: slot k ends at (k + 1) * slotMs.
      return closeTo(Math.max(0, Math.floor((untilMs - startedAtMs) / slotMs)));
    },
    keep(slot) {
      if (finished || slot < stats.slotsClosed || kept.includes(slot)) return;
      kept.push(slot);
      kept.sort((a, b) => a - b);
    },
    finish(endedAtMs) {
      if (finished) return [];
      finished = true;
      if (held === undefined) return [];
      const endSlot = Math.max(Math.round((endedAtMs - startedAtMs) / slotMs), stats.slotsClosed + (heldWritten ? 0 : 1));
      const writes = closeTo(endSlot);
      // The last frame lasts one slot: one in the last slot takes the video to its end.
      if (lastWrittenSlot < endSlot - 1) write(endSlot - 1, writes);
      return writes;
    },
  };
}

/** Wall-clock time (epoch ms) at which slot `slot` of a timeline starts. */
export function slotStartMs(slot: number, fps: number, startedAtMs: number): number {
  return startedAtMs + (slot * 1000) / fps;
}
