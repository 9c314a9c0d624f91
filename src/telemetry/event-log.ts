import { createWriteStream, type WriteStream } from 'node:fs';
import type { EventSink } from './types.js';

/**
 * `logs.jsonl` of one execution (contract §5): one JSON event per line, written as it
 * happens so a crash keeps what came before. Every event passes through `redact` first.
 */
export interface EventLog extends EventSink {
  readonly path: string;
  /** Number of events of a type so far. */
  count(type: string): number;
  /** Flushes and closes the file; idempotent. Events after close are dropped. */
  close(): Promise<void>;
}

export function createEventLog(options: {
  path: string;
  executionId: string;
  redact: <T>(value: T) => T;
  now?: () => number;
  /** Mirror of each event (the process log at debug level, metrics). */
  onEvent?: (type: string, fields: Record<string, unknown>) => void;
}): EventLog {
  const now = options.now ?? Date.now;
  const startedAt = now();
  const stream: WriteStream = createWriteStream(options.path, { flags: 'a' });
  const counts = new Map<string, number>();
  let closing: Promise<void> | undefined;
  let streamError: Error | undefined;
  stream.on('error', (error) => {
    streamError = error;
  });

  return {
    path: options.path,
    emit(type, fields = {}) {
      counts.set(type, (counts.get(type) ?? 0) + 1);
      const at = now();
      const safe = options.redact(fields);
      options.onEvent?.(type, safe);
      if (closing || streamError) return;
      const line = JSON.stringify({ ts: new Date(at).toISOString(), t: at - startedAt, type, executionId: options.executionId, ...safe });
      stream.write(`${line}\n`);
    },
    count: (type) => counts.get(type) ?? 0,
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (stream.destroyed) return resolve();
        stream.end(() => resolve());
      });
      return closing;
    },
  };
}
