/**
 * The process log's view of the secrets alive in the process (docs/secrets.md#exits): each run
 * adds its redaction while it runs, the composition adds the configured keys for good, and every
 * line the logger writes passes through all of them (pino's `streamWrite` hook), so no call
 * site has to remember which of its fields could carry a secret.
 */
import { deepMapStrings } from '../domain/secrets.js';

type Redact = (text: string) => string;

const active = new Set<Redact>();

/** Adds a redaction to every process log line until the returned function is called. */
export function scrubFromProcessLog(redact: Redact): () => void {
  // A fresh wrapper per call: one redaction added twice is removed twice.
  const entry: Redact = (text) => redact(text);
  active.add(entry);
  return () => {
    active.delete(entry);
  };
}

/**
 * A text with every live secret replaced: the same redactions for the process's other exits, such
 * as the spans it exports (src/tracing/), as for its log.
 */
export function scrubText(text: string): string {
  let out = text;
  for (const redact of active) out = redact(out);
  return out;
}

/** One log line (JSON text and a newline) with every live secret replaced in each string. */
export function scrubLogLine(line: string): string {
  if (active.size === 0) return line;
  const redactAll = scrubText;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return redactAll(line);
  }
  // Strings are redacted as values, then serialised again: the line stays valid JSON.
  return `${JSON.stringify(deepMapStrings(parsed, redactAll))}\n`;
}

