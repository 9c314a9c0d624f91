import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { valueAt } from '../contract/key-path.js';
import { safeRegExp } from './safe-regexp.js';
import { parseTotpSeed } from './totp.js';
import type { JsonSchema } from '../contract/json.js';

/** JSON Schema validation of payloads and outputs; drafts 07 and 2020-12. */

export type SchemaCheck = { ok: true } | { ok: false; errors: string };
/** A value's check against a schema: at once, or (off the event loop: schema-check.ts) later. */
export type SchemaValidator = (value: unknown) => SchemaCheck | Promise<SchemaCheck>;

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => void;

/**
 * An Ajv for `schema`'s draft (2020-12 when its `$schema` says so, else draft 07), with formats
 * and our `x-secret` keyword. Without a schema: draft 07. `extra`: Ajv's coercion and defaults,
 * for query strings.
 */
export function createSchemaAjv(schema?: JsonSchema, extra: { coerceTypes?: boolean; useDefaults?: boolean } = {}): Ajv {
  const is2020 = typeof schema === 'object' && typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
  // Patterns run on a linear-time engine: a workflow's schema cannot stall the process (ReDoS).
  // `$data` stays off: with it `const`, `enum` or `minimum` could compare a value of the input with
  // another, and a caller could test a kept secret against a guess sent beside it
  // (docs/security.md#secrets-at-rest); uniqueItems, the one keyword that does, is ruled on there.
  const options = { allErrors: true, strict: false, validateFormats: true, code: { regExp: safeRegExp }, ...extra } as const;
  const ajv = is2020 ? new Ajv2020(options) : new Ajv(options);
  addFormats(ajv as Ajv);
  // Ajv compares every pair of items of a `uniqueItems` array that may hold objects (O(n²) deep
  // equality: a 190 kB body took 15 s); ours keys each item by its canonical JSON, in one pass.
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: uniqueItems });
  // The secret and file markers (docs/secrets.md, docs/files-and-codes.md) are ours, not JSON Schema's.
  ajv.addKeyword({ keyword: 'x-secret', schemaType: 'boolean' });
  ajv.addKeyword({ keyword: 'x-file', schemaType: 'boolean' });
  // One-time-code seeds (docs/files-and-codes.md): a base32 secret or an otpauth://totp/ URI.
  ajv.addFormat('totp', { type: 'string', validate: (value: string) => parseTotpSeed(value).ok });
  return ajv as Ajv;
}

/**
 * `uniqueItems` in time linear in the array's size (plus sorting each object's keys): two items
 * are equal when their canonical JSON (keys sorted) is, which is JSON Schema's equality (`1` and
 * `1.0` are one number in JSON; object key order does not matter).
 */
const uniqueItems: ((schema: unknown, data: unknown) => boolean) & { errors?: Partial<ErrorObject>[] } = (schema, data) => {
  uniqueItems.errors = [];
  if (schema !== true || !Array.isArray(data)) return true;
  const seen = new Map<string, number>();
  for (const [i, item] of data.entries()) {
    const key = canonicalJson(item);
    const j = seen.get(key);
    if (j !== undefined) {
      uniqueItems.errors = [{ keyword: 'uniqueItems', params: { i: j, j: i }, message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)` }];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  // JSON.stringify(-0) is "0": -0 and 0 are the same JSON number.
  return JSON.stringify(value) ?? 'null';
}

/** Compiles a schema to Ajv's validator (its raw errors); throws when the schema is invalid. */
export function compileRawSchema(schema: JsonSchema): ValidateFunction {
  return createSchemaAjv(schema).compile(schema as object);
}

/** Compiles a schema; throws with a readable message when the schema itself is invalid. */
export function compileSchema(schema: JsonSchema): (value: unknown) => SchemaCheck {
  const validate = compileRawSchema(schema);
  return (value) => (validate(value) ? { ok: true } : { ok: false, errors: describeSchemaErrors(validate.errors ?? [], value) });
}

/** Ajv's errors as one line: `/path message (property)`, separated by `; `. */
export function describeSchemaErrors(errors: readonly ErrorObject[], value: unknown): string {
  return errors
    .map((e) => `${e.instancePath || '(root)'} ${describeError(e, value)}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`)
    .join('; ');
}

/** Ajv's message, or for a bad TOTP seed why it is bad (never the seed itself). */
function describeError(error: ErrorObject, root: unknown): string {
  if (error.keyword === 'format' && (error.params as { format?: unknown }).format === 'totp') {
    const parsed = parseTotpSeed(valueAtPointer(root, error.instancePath));
    if (!parsed.ok) return `is not a usable TOTP seed: ${parsed.reason}`;
  }
  return error.message ?? 'is invalid';
}

/** The value an error's instance path (a JSON pointer) names, own properties only. */
function valueAtPointer(root: unknown, pointer: string): unknown {
  return valueAt(root, pointer === '' ? [] : pointer.slice(1).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~')));
}
