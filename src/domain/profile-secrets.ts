import type { StorageState } from '../contract/storage-state.js';

/**
 * A browser profile's values as secrets (docs/profiles.md#what-a-run-reports): what the run's
 * redaction scrubs wherever a page would show a saved cookie or storage value to the model, a
 * log or an artifact.
 */

/** Names of a key, header or field that say its value is a credential. */
export const CREDENTIAL_NAME = /auth|key|token|secret|passw|signature|cookie|session|bearer|jwt|credential/i;

/** Values shorter than this are not redacted as profile secrets: `1`, `true`, `en-GB` would blank out ordinary text. */
const MIN_SECRET_LENGTH = 8;
/** Strings taken from one state's structured values, at most: a profile holding app data must not make every redaction slow. */
const MAX_STRUCTURED_SECRETS = 500;
/** Strings looked at inside structured values, at most: the walk's own bound. */
const MAX_STRUCTURED_VISITS = 50_000;

/**
 * The state's values to redact wherever a page would show them (docs/profiles.md#what-a-run-reports):
 * every cookie and storage value of 8 characters or more, and inside a structured value — JSON,
 * also percent-encoded (`j%3A%7B…` cookies) or JSON inside a JSON string — each string of 8
 * characters or more without whitespace (a token inside `{"accessToken": …}` is shown by a page
 * on its own), and each token-shaped word of a string with whitespace (`Bearer eyJ…` shows its
 * token alone in a header). A string under a key that names a credential (`access_token`,
 * `apiKey`, `password`, `session`…) is always taken. Of the others, when a structured value holds
 * more than the bound, the most token-like are taken (by character classes, then length), not
 * the first ones: a token stored after an app's cache of ids is still found.
 */
export function profileSecrets(state: StorageState): string[] {
  const values = [...state.cookies.map((c) => c.value), ...state.origins.flatMap((o) => o.localStorage.map((e) => e.value))];
  const out = new Set(values.filter((v) => v.length >= MIN_SECRET_LENGTH));
  const candidates = new Set<string>();
  const credentials = new Set<string>();
  let visits = 0;
  const take = (text: string, depth: number): void => {
    for (const candidate of new Set([text, percentDecoded(text)])) {
      const parsed = parseStructured(candidate);
      if (parsed !== undefined) walk(parsed, depth, '');
    }
  };
  const walk = (value: unknown, depth: number, key: string): void => {
    if (visits >= MAX_STRUCTURED_VISITS) return;
    if (typeof value === 'string') {
      visits += 1;
      // Under a key that names a credential (`access_token`, `apiKey`, `password`…) it is kept whatever the bound.
      const found = CREDENTIAL_NAME.test(key) ? credentials : candidates;
      if (!/\s/u.test(value)) {
        if (value.length >= MIN_SECRET_LENGTH) found.add(value);
      } else {
        for (const word of value.split(/\s+/u)) if (isTokenShaped(word)) found.add(word);
      }
      if (depth < 3) take(value, depth + 1);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, depth, key);
    } else if (value !== null && typeof value === 'object') {
      for (const [name, item] of Object.entries(value)) walk(item, depth, name);
    }
  };
  for (const value of values) take(value, 0);
  for (const credential of credentials) out.add(credential);
  const ranked = [...candidates].filter((c) => !out.has(c)).sort((a, b) => tokenRank(b) - tokenRank(a));
  for (const candidate of ranked.slice(0, MAX_STRUCTURED_SECRETS)) out.add(candidate);
  return [...out];
}

/** Character classes a string uses (lower, upper, digit, other): a token uses several, a word one. */
function characterClasses(text: string): number {
  return [/[a-z]/u, /[A-Z]/u, /[0-9]/u, /[^a-zA-Z0-9]/u].filter((re) => re.test(text)).length;
}

/** A word of a sentence that looks like a credential: long enough, and letters mixed with digits or signs, or very long. */
export function isTokenShaped(word: string): boolean {
  return word.length >= 16 && (characterClasses(word) >= 3 || word.length >= 32);
}

function tokenRank(text: string): number {
  return characterClasses(text) * 1_000 + Math.min(text.length, 999);
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
