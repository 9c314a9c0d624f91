import { ExecutionError } from '../contract/errors.js';
import { MAX_REWRITE_PATHS, TooManyPathsError, formatPath, outermostPaths, parsePath, pathId, rewriteAt, valueAt, type KeyPath } from '../contract/key-path.js';
import { redactFieldRuns } from './field-runs.js';
import { secretForms, type SecretForms } from './secret-forms.js';
import { findSecretMarks, type SecretMark } from './secret-marks.js';
import { parseTotpSeed, totp, type TotpSeed } from './totp.js';
import type { JsonSchema } from '../contract/json.js';

/**
 * Secret input values (docs/secrets.md): fields whose schema says `"writeOnly": true` or
 * `"x-secret": true`. The model only ever sees `{{path}}`; the worker puts the real value back
 * when it types, and scrubs it from anything it writes.
 *
 * A property with `"format": "totp"` holds a one-time-code seed (docs/files-and-codes.md) and is a secret
 * whether or not it is marked: its placeholder types the code of the moment it is revealed,
 * never the seed, and every code revealed is redacted from then on like the seed itself.
 */
export interface SecretVault {
  /** The input payload with every secret replaced by its `{{path}}` placeholder. */
  readonly maskedPayload: unknown;
  /**
   * Placeholder paths in their text form (key-path.ts `formatPath`): `password`,
   * `login.password`, `cards.0.pin`, `totals["U.S. total"]`.
   */
  readonly paths: readonly string[];
  /** The same paths as arrays of keys, in the same order. */
  readonly keyPaths: readonly KeyPath[];
  /** The paths among `paths` whose placeholder types a one-time code (`format: "totp"`). */
  readonly oneTimeCodePaths: readonly string[];
  /**
   * Replaces each known `{{path}}` in text the model wants typed with the real value; a
   * one-time-code placeholder becomes the code valid now. Call it just before typing.
   */
  reveal(text: string): string;
  /**
   * Replaces every secret value in text with its placeholder, in each of the forms a page or a
   * transport gives it (docs/secrets.md#forms: escaped, encoded, case-changed, cut short…).
   */
  redact(text: string): string;
  /** Deep copy of a JSON value with every string redacted. */
  redactValue<T>(value: T): T;
}

interface SecretEntry {
  path: KeyPath;
  /** `formatPath(path)`: what the placeholder says. */
  name: string;
  value: string;
  /** Set for a `format: "totp"` seed: reveal computes a code from it. */
  seed?: TotpSeed;
}

export interface SecretVaultOptions {
  /** Clock of one-time codes (tests); Date.now by default. */
  now?: () => number;
  /**
   * The schema's marks on this payload, when they were found already (off the event loop, by
   * the bounded schema check: docs/secrets.md#bounds); else they are found here.
   */
  marks?: readonly SecretMark[];
}

/**
 * Throws `invalid_input` naming the property when a one-time-code seed cannot be read (the
 * payload schema's `format: "totp"` check normally finds it first).
 */
export function createSecretVault(
  payload: unknown,
  schema: JsonSchema | undefined,
  extraSecrets: readonly string[] = [],
  options: SecretVaultOptions = {},
): SecretVault {
  const now = options.now ?? Date.now;
  const entries: SecretEntry[] = [];
  const maskedPayload = schema === undefined ? payload : mask(payload, options.marks ?? findSecretMarks(payload, schema), entries);
  const byPath = new Map(entries.map((e) => [pathId(e.path), e]));
  // A secret's forms are compiled when the vault first redacts: a vault made only for its masked
  // payload (the local API's) never pays for them.
  const redactions: Array<{ value: string; placeholder: string; forms?: SecretForms }> = [];
  // A set and a sort before the next use rather than a search and a sort per value: a vault of
  // many secrets is made in linear time (docs/secrets.md#bounds).
  const known = new Set<string>();
  let sorted = true;
  const addRedaction = (value: string, placeholder: string): void => {
    if (value.trim().length === 0 || known.has(value)) return;
    known.add(value);
    redactions.push({ value, placeholder });
    sorted = false;
  };
  for (const e of entries) {
    addRedaction(e.value, placeholder(e.path));
    // The seed also appears as its bare secret (in an otpauth URI, or spaced out in groups).
    if (e.seed) addRedaction(e.seed.base32, placeholder(e.path));
  }
  for (const value of extraSecrets) if (value.length >= 4) addRedaction(value, '[REDACTED]');

  const revealOne = (entry: SecretEntry): string => {
    if (!entry.seed) return entry.value;
    const code = totp(entry.seed, now());
    // A page that echoes the code ("code 123456 accepted") must not carry it into logs.
    addRedaction(code, placeholder(entry.path));
    return code;
  };

  const redact = (text: string): string => {
    if (!sorted) {
      // Longest first, so a secret that contains another is replaced whole.
      redactions.sort((a, b) => b.value.length - a.value.length);
      sorted = true;
    }
    let out = text;
    for (const r of redactions) out = (r.forms ??= secretForms(r.value)).replace(out, r.placeholder);
    // A secret spread one character per field across adjacent fields, as a page read writes them.
    return redactions.length === 0 ? out : redactFieldRuns(out, redactText);
  };
  const redactText = (text: string): string => {
    let out = text;
    for (const r of redactions) out = (r.forms ??= secretForms(r.value)).replace(out, r.placeholder);
    return out;
  };
  const redactValue = <T>(value: T): T => deepMapStrings(value, redact) as T;

  return {
    maskedPayload,
    paths: entries.map((e) => e.name),
    keyPaths: entries.map((e) => e.path),
    oneTimeCodePaths: entries.filter((e) => e.seed).map((e) => e.name),
    reveal: (text) =>
      text.replace(PLACEHOLDER, (whole, inner: string) => {
        const path = parsePath(inner);
        const entry = path && byPath.get(pathId(path));
        return entry ? revealOne(entry) : whole;
      }),
    redact,
    redactValue,
  };
}

/** The placeholder of a secret: `{{` + its path's text form + `}}`. */
export function placeholder(path: KeyPath): string {
  return `{{${formatPath(path)}}}`;
}

/**
 * A placeholder as the model may write it: `{{login.password}}`, `{{ cards[0].pin }}`,
 * `{{totals["U.S. total"]}}` (a quoted key may hold any character, `}}` included). Each
 * alternative starts on a different character, so a scan never backtracks into itself.
 */
const PLACEHOLDER = /\{\{(\s*(?:[A-Za-z0-9_.-]|\[(?:\d+|"(?:[^"\\]|\\.)*")\])+\s*)\}\}/g;

/**
 * Each value the marks name, replaced by its placeholder in a copy of the payload, in one pass
 * (key-path.ts `rewriteAt`): at most `MAX_REWRITE_PATHS` secrets, else `invalid_input`.
 */
function mask(payload: unknown, marks: readonly SecretMark[], out: SecretEntry[]): unknown {
  if (marks.length > MAX_REWRITE_PATHS) throw new ExecutionError('invalid_input', new TooManyPathsError(marks.length).message);
  // A marked object is one secret, its marked members are inside it.
  for (const mark of outermostPaths(marks)) {
    const { path } = mark;
    const value = valueAt(payload, path);
    if (value === undefined || value === null) continue;
    const name = formatPath(path);
    const entry: SecretEntry = { path, name, value: typeof value === 'string' ? value : JSON.stringify(value) };
    if (mark.totp) {
      const parsed = parseTotpSeed(value);
      if (!parsed.ok) throw new ExecutionError('invalid_input', `input ${name || '(root)'} is not a usable TOTP seed: ${parsed.reason}`);
      entry.seed = parsed.seed;
    }
    out.push(entry);
  }
  return rewriteAt(payload, out.map((e) => e.path), (path) => placeholder(path));
}

/** A copy of a JSON value with `fn` applied to every string, keys included. */
export function deepMapStrings(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => deepMapStrings(v, fn));
  if (value !== null && typeof value === 'object') {
    if (Buffer.isBuffer(value)) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [fn(k), deepMapStrings(v, fn)]));
  }
  return value;
}
