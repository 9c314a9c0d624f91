import type { BrowserSession, LimitReached, ScreencastFrame } from '../browser/types.js';

/** The video recorder port: a session's screencast into `video.mp4` (docs/counters-and-artifacts.md#videomp4). */

export interface RecorderOptions {
  session: BrowserSession;
  /** Where to write the MP4. */
  outputPath: string;
  /** Wall-clock start of the timeline (epoch ms); frames are placed relative to it. */
  startedAtMs: number;
  signal?: AbortSignal;
  /** Called once if the video reaches VIDEO_MAX_BYTES and its recording ends early. */
  onLimit?: (reached: LimitReached) => void;
}

export interface ActionMark {
  /** Epoch ms the action happened. */
  atMs: number;
  /** Short human text, secrets already as placeholders: `click (412, 318)`, `type "{{password}}"`. */
  label: string;
  /** Where a pointer action landed, in viewport CSS px (draws a marker in the video). */
  point?: { x: number; y: number };
}

export interface FinishedVideo {
  path: string;
  durationMs: number;
  frames: number;
  droppedFrames: number;
  /**
   * Set when the file reached VIDEO_MAX_BYTES and the recording ended there, before the run did
   * (docs/security.md#limits): the video stops at `durationMs`, the run went on.
   */
  stoppedAtLimit?: { limit: 'VIDEO_MAX_BYTES'; maxBytes: number; bytes: number };
}

export interface ActiveRecording {
  /** Records an action on the timeline (WebVTT cue, and a marker for pointer actions). */
  mark(mark: ActionMark): void;
  /**
   * Ends the recording at `endedAtMs` and finalises the file. Resolves null when no video
   * could be made (the reason is logged). Never leaves ffmpeg running. Idempotent.
   */
  stop(endedAtMs?: number): Promise<FinishedVideo | null>;
  /** WebVTT text of every mark so far, times relative to `startedAtMs`. */
  stepsVtt(): string;
  /**
   * Hands each screencast frame to `listener` too, as it arrives (the live view: one screencast
   * per page, the recorder's). The listener must not block; the returned function removes it.
   */
  tap(listener: (frame: ScreencastFrame) => void): () => void;
}

export interface VideoRecorder {
  start(options: RecorderOptions): Promise<ActiveRecording>;
  /** Ends what the recorder keeps between recordings (warm encoders); call when the worker closes. */
  close?(): Promise<void>;
}
