import { createWriteStream, type WriteStream } from 'node:fs';
import type { EventSink } from './types.js';

/**
 * `logs.jsonl` of one execution (docs/counters-and-artifacts.md#artifacts): one JSON event per line, written as it
 * happens so a crash keeps what came before. Every event passes through `redact` first.
 */
export interface EventLog extends EventSink {
  readonly path: string;
  /** Number of events of a type so far. */
  count(type: string): number;
  /**
   * Moves the origin of `t` to the run's start (the `started` call), which is also the start
   * of the video: an event at `t` ms is seen at second t/1000 of video.mp4.
   */
  setOrigin(epochMs: number): void;
  /** Flushes and closes the file; idempotent. Events after close are dropped. */
  close(): Promise<void>;
}

export function createEventLog(options: {
  path: string;
  executionId: string;
  redact: <T>(value: T) => T;
  now?: () => number;
  /** Mirror of each event (the process log at debug level, metrics, the live view), with its line. */
  onEvent?: (type: string, fields: Record<string, unknown>, line: Record<string, unknown>) => void;
}): EventLog {
  const now = options.now ?? Date.now;
  let origin = now();
  const stream: WriteStream = createWriteStream(options.path, { flags: 'a' });
  const counts = new Map<string, number>();
  let closing: Promise<void> | undefined;
  let streamError: Error | undefined;
  stream.on('error', (error) => {
    streamError = error;
  });

  return {
    path: options.path,
    emit(type, fields = {}, atMs) {
      counts.set(type, (counts.get(type) ?? 0) + 1);
      const at = atMs ?? now();
      const safe = options.redact(fields);
      const line = { ts: new Date(at).toISOString(), t: at - origin, type, executionId: options.executionId, ...safe };
      options.onEvent?.(type, safe, line);
      if (closing || streamError) return;
      stream.write(`${JSON.stringify(line)}\n`);
    },
    count: (type) => counts.get(type) ?? 0,
    setOrigin(epochMs) {
      origin = epochMs;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (stream.destroyed) return resolve();
        stream.end(() => resolve());
      });
      return closing;
    },
  };
}
