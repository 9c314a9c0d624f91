import type { StorageState } from '../browser/types.js';

/**
 * A browser profile's values as secrets (docs/profiles.md#what-a-run-reports): what the run's
 * redaction scrubs wherever a page would show a saved cookie or storage value to the model, a
 * log or an artifact.
 */

/** Values shorter than this are not redacted as profile secrets: `1`, `true`, `en-GB` would blank out ordinary text. */
const MIN_SECRET_LENGTH = 8;
/** Strings taken from one state's structured values, at most: a profile holding app data must not make every redaction slow. */
const MAX_STRUCTURED_SECRETS = 500;

/**
 * The state's values to redact wherever a page would show them (docs/profiles.md#what-a-run-reports):
 * every cookie and storage value of 8 characters or more, and inside a structured value — JSON,
 * also percent-encoded (`j%3A%7B…` cookies) or JSON inside a JSON string — each string of 8
 * characters or more without whitespace: a token inside `{"accessToken": …}` is shown by a page
 * on its own. Strings with whitespace in them (a display name, a sentence) are left to the whole
 * value: tokens, ids and keys have none.
 */
export function profileSecrets(state: StorageState): string[] {
  const values = [...state.cookies.map((c) => c.value), ...state.origins.flatMap((o) => o.localStorage.map((e) => e.value))];
  const out = new Set(values.filter((v) => v.length >= MIN_SECRET_LENGTH));
  let structured = 0;
  const take = (text: string, depth: number): void => {
    for (const candidate of new Set([text, percentDecoded(text)])) {
      const parsed = parseStructured(candidate);
      if (parsed !== undefined) walk(parsed, depth);
    }
  };
  const walk = (value: unknown, depth: number): void => {
    if (structured >= MAX_STRUCTURED_SECRETS) return;
    if (typeof value === 'string') {
      if (value.length >= MIN_SECRET_LENGTH && !/\s/u.test(value) && !out.has(value)) {
        out.add(value);
        structured += 1;
      }
      if (depth < 3) take(value, depth + 1);
    } else if (value !== null && typeof value === 'object') {
      for (const item of Object.values(value)) walk(item, depth);
    }
  };
  for (const value of values) take(value, 0);
  return [...out];
}

/**
 * A JSON object, array or string in the text (after a `j:` prefix, as Express writes JSON
 * cookies; a token saved with `JSON.stringify` keeps its quotes), else undefined.
 */
function parseStructured(text: string): unknown {
  const body = text.replace(/^j:/, '').trim();
  if (!/^[{["]/.test(body)) return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

function percentDecoded(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
