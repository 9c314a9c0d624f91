/** A pino log line, parsed (a line that is not JSON becomes `{ msg: line }`). */
export interface LogLine {
  msg: string;
  level?: string;
  [field: string]: unknown;
}

/**
 * Collects a process's log (pino JSON lines) as it is written, in chunks that may split lines.
 * Used for a daemon's stdout and for an in-process logger's destination.
 */
export function createLogLines(onLines: () => void = () => undefined): { lines: LogLine[]; write(chunk: string): void } {
  const lines: LogLine[] = [];
  let partial = '';
  return {
    lines,
    write(chunk) {
      partial += chunk;
      const complete = partial.split('\n');
      partial = complete.pop() ?? '';
      for (const raw of complete) {
        if (!raw.trim()) continue;
        try {
          const parsed = JSON.parse(raw) as LogLine;
          lines.push(typeof parsed === 'object' && parsed !== null ? { ...parsed, msg: String(parsed.msg ?? '') } : { msg: raw });
        } catch {
          lines.push({ msg: raw });
        }
      }
      onLines();
    },
  };
}
