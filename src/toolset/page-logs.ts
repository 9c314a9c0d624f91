/**
 * read_console and read_network as text: one line per entry, long entries cut, the whole
 * bounded, and credential-looking values (tokens, keys, passwords in URLs or log lines) masked,
 * as the documentation asks. Secrets of the input are redacted after this, by the caller.
 */
import type { ConsoleEntry, NetworkEntry } from '../browser/types.js';

const ENTRY_MAX_CHARS = 500;
const CREDENTIAL_KEY = /(pass(word|wd)?|pwd|secret|token|api[-_]?key|access[-_]?key|auth(orization)?|session(id)?|sig(nature)?|otp|code_verifier|client_secret|bearer)/i;

/** Masks the values of credential-like query parameters and `key=value` / `Bearer x` pairs in text. */
export function maskCredentials(text: string): string {
  return text
    .replace(/([?&;]([\w.-]+)=)([^&#\s]*)/g, (whole, prefix: string, key: string) => (CREDENTIAL_KEY.test(key) ? `${prefix}***` : whole))
    .replace(/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 ***')
    .replace(/\b([\w-]*(?:password|passwd|secret|token|api[-_]?key)[\w-]*)(["']?\s*[:=]\s*["']?)([^\s"',;&]{3,})/gi, '$1$2***');
}

function cut(text: string): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > ENTRY_MAX_CHARS ? `${one.slice(0, ENTRY_MAX_CHARS - 1)}…` : one;
}

function bounded(lines: string[], maxChars: number, empty: string): string {
  if (lines.length === 0) return empty;
  const out: string[] = [];
  let used = 0;
  for (const [i, line] of lines.entries()) {
    if (used + line.length + 1 > maxChars) {
      out.push(`[${lines.length - i} more entries not shown]`);
      break;
    }
    out.push(line);
    used += line.length + 1;
  }
  return out.join('\n');
}

export function formatConsole(entries: readonly ConsoleEntry[], maxChars: number): string {
  return bounded(
    entries.map((e) => `[${e.level}] ${maskCredentials(cut(e.text))}`),
    maxChars,
    '(no console entries since the last read)',
  );
}

export function formatNetwork(entries: readonly NetworkEntry[], maxChars: number): string {
  return bounded(
    entries.map((e) => {
      const url = maskCredentials(cut(e.url));
      const outcome = e.failure ? `failed: ${e.failure}` : `${e.status ?? '?'}${e.mimeType ? ` ${e.mimeType}` : ''}`;
      return `${e.method} ${url} → ${outcome}${e.durationMs !== undefined ? ` (${e.durationMs} ms)` : ''}`;
    }),
    maxChars,
    '(no network requests since the last read)',
  );
}
