import { ExecutionError } from './errors.js';
import type { JsonSchema } from './specification.js';
import { parseTotpSeed, totp, type TotpSeed } from './totp.js';

/**
 * Secret input values (contract §8): fields whose schema says `"writeOnly": true` or
 * `"x-secret": true`. The model only ever sees `{{path}}`; the worker puts the real value back
 * when it types, and scrubs it from anything it writes.
 *
 * A property with `"format": "totp"` holds a one-time-code seed (contract §12) and is a secret
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
  /** Replaces every occurrence of a secret value in text with its placeholder. */
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
  const maskedPayload = schema === undefined ? payload : mask(payload, schema, [], entries);
  const byPath = new Map(entries.map((e) => [e.path, e]));
  const redactions: Array<{ value: string; placeholder: string }> = [];
  const addRedaction = (value: string, placeholder: string): void => {
    if (value.length === 0 || redactions.some((r) => r.value === value)) return;
    redactions.push({ value, placeholder });
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
    for (const r of redactions) if (out.includes(r.value)) out = out.split(r.value).join(r.placeholder);
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

function isSecretSchema(schema: JsonSchema): boolean {
  return typeof schema === 'object' && (schema.writeOnly === true || schema['x-secret'] === true || isTotpSchema(schema));
}

function isTotpSchema(schema: JsonSchema): boolean {
  return typeof schema === 'object' && schema.format === 'totp';
}

function mask(value: unknown, schema: JsonSchema, path: string[], out: SecretEntry[]): unknown {
  if (typeof schema !== 'object') return value;
  if (isSecretSchema(schema) && value !== undefined && value !== null) {
    const key = path.join('.');
    const entry: SecretEntry = { path: key, value: typeof value === 'string' ? value : JSON.stringify(value) };
    if (isTotpSchema(schema)) {
      const parsed = parseTotpSeed(value);
      if (!parsed.ok) throw new ExecutionError('invalid_input', `input ${key || '(root)'} is not a usable TOTP seed: ${parsed.reason}`);
      entry.seed = parsed.seed;
    }
    out.push(entry);
    return `{{${key}}}`;
  }
  let result = value;
  for (const combinator of ['allOf', 'anyOf', 'oneOf'] as const) {
    const branches = schema[combinator];
    if (Array.isArray(branches)) {
      for (const branch of branches) result = mask(result, branch as JsonSchema, path, out);
    }
  }
  if (result !== null && typeof result === 'object' && !Array.isArray(result)) {
    const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const copy: Record<string, unknown> = { ...(result as Record<string, unknown>) };
    for (const [key, sub] of Object.entries(props)) {
      if (key in copy) copy[key] = mask(copy[key], sub, [...path, key], out);
    }
    return copy;
  }
  if (Array.isArray(result) && schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) {
    return result.map((item, i) => mask(item, schema.items as JsonSchema, [...path, String(i)], out));
  }
  return result;
}

function deepMapStrings(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => deepMapStrings(v, fn));
  if (value !== null && typeof value === 'object') {
    if (Buffer.isBuffer(value)) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, deepMapStrings(v, fn)]));
  }
  return value;
}
