import { ExecutionError } from './errors.js';
import type { JsonSchema } from './specification.js';
import { secretForms, type SecretForms } from './secret-forms.js';
import { findSecretMarks, pointerParts } from './secret-marks.js';
import { parseTotpSeed, totp, type TotpSeed } from './totp.js';

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
  /** Placeholder paths, e.g. `password`, `login.password`, `cards.0.pin`. */
  readonly paths: readonly string[];
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
  path: string;
  value: string;
  /** Set for a `format: "totp"` seed: reveal computes a code from it. */
  seed?: TotpSeed;
}

export interface SecretVaultOptions {
  /** Clock of one-time codes (tests); Date.now by default. */
  now?: () => number;
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
  const maskedPayload = schema === undefined ? payload : mask(payload, schema, entries);
  const byPath = new Map(entries.map((e) => [e.path, e]));
  const redactions: Array<{ value: string; placeholder: string; forms: SecretForms }> = [];
  const addRedaction = (value: string, placeholder: string): void => {
    if (value.trim().length === 0 || redactions.some((r) => r.value === value)) return;
    redactions.push({ value, placeholder, forms: secretForms(value) });
    // Longest first, so a secret that contains another is replaced whole.
    redactions.sort((a, b) => b.value.length - a.value.length);
  };
  for (const e of entries) {
    addRedaction(e.value, `{{${e.path}}}`);
    // The seed also appears as its bare secret (in an otpauth URI, or spaced out in groups).
    if (e.seed) addRedaction(e.seed.base32, `{{${e.path}}}`);
  }
  for (const value of extraSecrets) if (value.length >= 4) addRedaction(value, '[REDACTED]');

  const revealOne = (entry: SecretEntry): string => {
    if (!entry.seed) return entry.value;
    const code = totp(entry.seed, now());
    // A page that echoes the code ("code 123456 accepted") must not carry it into logs.
    addRedaction(code, `{{${entry.path}}}`);
    return code;
  };

  const redact = (text: string): string => {
    let out = text;
    for (const r of redactions) out = r.forms.replace(out, r.placeholder);
    return out;
  };
  const redactValue = <T>(value: T): T => deepMapStrings(value, redact) as T;

  return {
    maskedPayload,
    paths: entries.map((e) => e.path),
    oneTimeCodePaths: entries.filter((e) => e.seed).map((e) => e.path),
    reveal: (text) =>
      text.replace(/\{\{\s*([A-Za-z0-9_.\-[\]]+)\s*\}\}/g, (whole, path: string) => {
        const entry = byPath.get(normalisePath(path));
        return entry ? revealOne(entry) : whole;
      }),
    redact,
    redactValue,
  };
}

function normalisePath(path: string): string {
  return path.replace(/\[(\d+)\]/g, '.$1');
}

/** Each value the schema marks secret, replaced by its placeholder in a copy of the payload. */
function mask(payload: unknown, schema: JsonSchema, out: SecretEntry[]): unknown {
  // Outermost marks first: a marked object is one secret, its marked members are inside it.
  const marks = findSecretMarks(payload, schema).sort((a, b) => pointerParts(a.pointer).length - pointerParts(b.pointer).length);
  let masked = payload;
  const taken: string[][] = [];
  for (const mark of marks) {
    const parts = pointerParts(mark.pointer);
    if (taken.some((outer) => outer.every((part, i) => parts[i] === part))) continue;
    const value = valueAt(payload, parts);
    if (value === undefined || value === null) continue;
    taken.push(parts);
    const key = parts.join('.');
    const entry: SecretEntry = { path: key, value: typeof value === 'string' ? value : JSON.stringify(value) };
    if (mark.totp) {
      const parsed = parseTotpSeed(value);
      if (!parsed.ok) throw new ExecutionError('invalid_input', `input ${key || '(root)'} is not a usable TOTP seed: ${parsed.reason}`);
      entry.seed = parsed.seed;
    }
    out.push(entry);
    masked = withValueAt(masked, parts, `{{${key}}}`);
  }
  return masked;
}

function valueAt(root: unknown, parts: readonly string[]): unknown {
  let node = root;
  for (const part of parts) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

/** A copy of `root` with the value at `parts` replaced (containers along the path copied). */
function withValueAt(root: unknown, parts: readonly string[], value: unknown): unknown {
  if (parts.length === 0) return value;
  const [head, ...rest] = parts as [string, ...string[]];
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[Number(head)] = withValueAt(copy[Number(head)], rest, value);
    return copy;
  }
  const copy: Record<string, unknown> = { ...(root as Record<string, unknown>) };
  Object.defineProperty(copy, head, { value: withValueAt(copy[head], rest, value), enumerable: true, writable: true, configurable: true });
  return copy;
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
