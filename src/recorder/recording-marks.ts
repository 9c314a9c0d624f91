import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../telemetry/types.js';
import { createClickMarker, MARKER_DURATION_MS, type ClickMarker } from './click-marker.js';
import { buildStepsVtt } from './steps-vtt.js';
import type { ActionMark } from './types.js';

/**
 * A recording's action marks: the WebVTT track of every action, and for pointer actions a
 * marker drawn by ffmpeg (click-marker.ts) through its command channel, a Unix socket in a
 * private temporary folder.
 *
 * Marks may come before the encoder starts (it starts with the first frame): they are kept and
 * sent once the channel is open. The frames of a marked moment are held back until then (ffmpeg
 * opens the channel only after its first frame, and a command arriving after the frames of its
 * moment would draw nothing).
 */

/**
 * Frames written before the marker channel may be waited for: ffmpeg builds its filter graph
 * (and the marker channel with it) from the first frame. One only: with a variable rate the
 * second frame may already be seconds later, past a click.
 */
const MARKER_FREE_FRAMES = 1;

export interface RecordingMarks {
  /** Records an action; a pointer action's marker is shown when the channel is open. */
  add(mark: ActionMark): void;
  /**
   * The encoder is starting, with frames `scale` times the viewport's CSS px: the filters to
   * append to its graph (none without markers).
   */
  filters(scale: number): readonly string[];
  /** The encoder started: opens the channel and sends the marks so far. */
  connect(): void;
  /**
   * The recording uses a shared encoder (shared-encoder.ts): its channel `marker` (already
   * open, or opening), frames `scale` times the viewport's CSS px, the recording's timeline
   * starting `offsetMs` into the encoder's. Sends the marks so far.
   */
  share(marker: ClickMarker | undefined, scale: number, offsetMs: number): void;
  /** Resolves when a frame of `slot` may be written (see above). */
  beforeWrite(slot: number, framesEncoded: number): Promise<void>;
  /** ffmpeg is about to exit (its channel closing is no reason to reconnect). */
  ending(): void;
  stepsVtt(): string;
  /** Closes the channel and removes its folder. */
  close(): Promise<void>;
}

export async function createRecordingMarks(options: {
  /** Whether this ffmpeg can draw markers (it has the zmq and drawbox filters). */
  markers: boolean;
  /** The encoder is shared and owns the channel (`share`): no folder of our own. */
  sharedEncoder?: boolean;
  fps: number;
  startedAtMs: number;
  log: Logger;
  /** Asks the pacer to write the picture of a slot even if unchanged. */
  keep(slot: number): void;
}): Promise<RecordingMarks> {
  const { fps, startedAtMs, log } = options;
  const scratchDir = options.markers && !options.sharedEncoder ? await mkdtemp(path.join(os.tmpdir(), 'ew-video-')) : undefined;
  const marks: ActionMark[] = [];
  let marker: ClickMarker | undefined;
  /** Whether `marker` is ours to end and close (not a shared encoder's). */
  let ownMarker = false;
  let outputScale = 1;
  /** Where this recording's timeline starts on the encoder's (a shared encoder's stream), in ms. */
  let offsetMs = 0;
  /** Once true, the marker channel was waited for (open, or given up): frames flow freely. */
  let markerReady = false;

  const show = (mark: ActionMark): void => {
    if (!marker || !mark.point) return;
    marker.show((mark.atMs - startedAtMs + offsetMs) / 1000, mark.point.x * outputScale, mark.point.y * outputScale);
  };
  /** The marker shows on the frames of [at, at + duration]: a frame where it starts and one just after it ends. */
  const keepSlots = (mark: ActionMark): void => {
    if (!mark.point || !options.markers) return;
    const fromSlot = Math.ceil(((mark.atMs - startedAtMs) * fps) / 1000 - 1e-6);
    const toSlot = Math.floor(((mark.atMs - startedAtMs + MARKER_DURATION_MS) * fps) / 1000 + 1e-6) + 1;
    options.keep(Math.max(0, fromSlot));
    options.keep(Math.max(0, toSlot));
  };

  return {
    add(mark) {
      marks.push({ ...mark, ...(mark.point ? { point: { ...mark.point } } : {}) });
      show(mark);
      keepSlots(mark);
    },
    filters(scale) {
      outputScale = scale;
      marker = scratchDir ? createClickMarker({ socketPath: path.join(scratchDir, 'zmq.sock'), logger: log }) : undefined;
      ownMarker = true;
      return marker?.filters ?? [];
    },
    connect() {
      marker?.connect();
      for (const mark of marks) show(mark);
    },
    share(shared, scale, offset) {
      marker = shared;
      outputScale = scale;
      offsetMs = offset;
      for (const mark of marks) show(mark);
    },
    async beforeWrite(slot, framesEncoded) {
      if (!marker || markerReady || framesEncoded < MARKER_FREE_FRAMES) return;
      const slotEndSec = (slot + 1) / fps;
      if (!marks.some((m) => m.point && (m.atMs - startedAtMs) / 1000 < slotEndSec)) return;
      markerReady = true;
      if (!(await marker.whenReady())) log.debug({}, 'click markers unavailable for this video');
    },
    ending() {
      if (ownMarker) marker?.ending();
    },
    stepsVtt() {
      return buildStepsVtt(marks, startedAtMs);
    },
    async close() {
      if (ownMarker) marker?.close();
      // `force` ignores a folder already gone: what is left is a real fault (permissions), logged.
      if (scratchDir) await rm(scratchDir, { recursive: true, force: true }).catch((error: unknown) => log.warn({ err: String(error), dir: scratchDir }, 'the click markers\' scratch folder could not be removed'));
    },
  };
}
