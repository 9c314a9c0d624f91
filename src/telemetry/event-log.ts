import { createWriteStream, type WriteStream } from 'node:fs';
import type { LogLine } from '../contract/log-line.js';

/**
 * `logs.jsonl` of one execution (docs/counters-and-artifacts.md#logsjsonl): one JSON event per
 * line, written as it happens so a crash keeps what came before. A subscriber of the execution's
 * event stream (telemetry/event-stream.ts), which has redacted and dated each line already.
 */
export interface EventLog {
  readonly path: string;
  /** Appends one line. Lines after close are dropped. */
  write(line: LogLine): void;
  /** Flushes and closes the file; idempotent. */
  close(): Promise<void>;
}

export function createEventLog(path: string): EventLog {
  const stream: WriteStream = createWriteStream(path, { flags: 'a' });
  let closing: Promise<void> | undefined;
  let streamError: Error | undefined;
  stream.on('error', (error) => {
    streamError = error;
  });

  return {
    path,
    write(line) {
      if (closing || streamError) return;
      stream.write(`${JSON.stringify(line)}\n`);
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
