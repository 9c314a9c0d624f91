import type { JsonSchema } from './specification.js';

/**
 * Secret input values (contract §8): fields whose schema says `"writeOnly": true` or
 * `"x-secret": true`. The model only ever sees `{{path}}`; the worker puts the real value back
 * when it types, and scrubs it from anything it writes.
 */
export interface SecretVault {
  /** The input payload with every secret replaced by its `{{path}}` placeholder. */
  readonly maskedPayload: unknown;
  /** Placeholder paths, e.g. `password`, `login.password`, `cards.0.pin`. */
  readonly paths: readonly string[];
  /** Replaces each known `{{path}}` in text the model wants typed with the real value. */
  reveal(text: string): string;
  /** Replaces every occurrence of a secret value in text with its placeholder. */
  redact(text: string): string;
  /** Deep copy of a JSON value with every string redacted. */
  redactValue<T>(value: T): T;
}

interface SecretEntry {
  path: string;
  value: string;
}

export function createSecretVault(payload: unknown, schema: JsonSchema | undefined, extraSecrets: readonly string[] = []): SecretVault {
  const entries: SecretEntry[] = [];
  const maskedPayload = schema === undefined ? payload : mask(payload, schema, [], entries);
  const byPath = new Map(entries.map((e) => [e.path, e.value]));
  // Longest first, so a secret that contains another is replaced whole.
  const redactions = [
    ...entries.map((e) => ({ value: e.value, placeholder: `{{${e.path}}}` })),
    ...extraSecrets.filter((s) => s.length >= 4).map((value) => ({ value, placeholder: '[REDACTED]' })),
  ]
    .filter((r) => r.value.length > 0)
    .sort((a, b) => b.value.length - a.value.length);

  const redact = (text: string): string => {
    let out = text;
    for (const r of redactions) if (out.includes(r.value)) out = out.split(r.value).join(r.placeholder);
    return out;
  };
  const redactValue = <T>(value: T): T => deepMapStrings(value, redact) as T;

  return {
    maskedPayload,
    paths: entries.map((e) => e.path),
    reveal: (text) =>
      text.replace(/\{\{\s*([A-Za-z0-9_.\-[\]]+)\s*\}\}/g, (whole, path: string) => byPath.get(normalisePath(path)) ?? whole),
    redact,
    redactValue,
  };
}

function normalisePath(path: string): string {
  return path.replace(/\[(\d+)\]/g, '.$1');
}

function isSecretSchema(schema: JsonSchema): boolean {
  return typeof schema === 'object' && (schema.writeOnly === true || schema['x-secret'] === true);
}

function mask(value: unknown, schema: JsonSchema, path: string[], out: SecretEntry[]): unknown {
  if (typeof schema !== 'object') return value;
  if (isSecretSchema(schema) && value !== undefined && value !== null) {
    const key = path.join('.');
    out.push({ path: key, value: typeof value === 'string' ? value : JSON.stringify(value) });
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
