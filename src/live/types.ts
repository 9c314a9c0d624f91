/**
 * The live view port (docs/operations.md#the-live-view): what the worker shows of a running execution to whoever watches
 * it on the dashboard. Nothing is sent while nobody watches; nothing ever waits on a viewer.
 */
import type { LogLine } from '../contract/log-line.js';

export interface LiveFrame {
  /** JPEG bytes. */
  data: Buffer;
  /** When it was painted, epoch ms. */
  timestampMs: number;
}

export interface LiveChannel {
  /** Whether someone watches now. */
  readonly watched: boolean;
  /** Called when watching starts or stops (a screencast made only for viewers follows it). */
  onWatchChange(listener: (watched: boolean) => void): void;
  /**
   * Offers a frame. While watched it is sent, at a few frames per second at most (the newest
   * wins); otherwise only the newest is kept, for a viewer who arrives. Never waits.
   */
  frame(frame: LiveFrame): void;
  /** A logs.jsonl line (already redacted): kept for viewers who arrive later, sent while watched. */
  event(line: LogLine): void;
  /** The run is over: viewers are told, the channel forgets the execution. Idempotent. */
  close(): void;
}

export interface LiveRelay {
  /** The channel of one execution, until its `close()`. */
  open(executionId: string): LiveChannel;
  close(): Promise<void>;
}
