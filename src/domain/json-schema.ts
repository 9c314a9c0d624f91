import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { valueAt } from './key-path.js';
import type { JsonSchema } from './specification.js';
import { safeRegExp } from './safe-regexp.js';
import { parseTotpSeed } from './totp.js';

/** JSON Schema validation of payloads and outputs; drafts 07 and 2020-12. */

export type SchemaCheck = { ok: true } | { ok: false; errors: string };
export type SchemaValidator = (value: unknown) => SchemaCheck;

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
  const options = { allErrors: true, strict: false, validateFormats: true, code: { regExp: safeRegExp }, ...extra } as const;
  const ajv = is2020 ? new Ajv2020(options) : new Ajv(options);
  addFormats(ajv as Ajv);
  // The secret and file markers (docs/secrets.md, docs/files-and-codes.md) are ours, not JSON Schema's.
  ajv.addKeyword({ keyword: 'x-secret', schemaType: 'boolean' });
  ajv.addKeyword({ keyword: 'x-file', schemaType: 'boolean' });
  // One-time-code seeds (docs/files-and-codes.md): a base32 secret or an otpauth://totp/ URI.
  ajv.addFormat('totp', { type: 'string', validate: (value: string) => parseTotpSeed(value).ok });
  return ajv as Ajv;
}

/** Compiles a schema to Ajv's validator (its raw errors); throws when the schema is invalid. */
export function compileRawSchema(schema: JsonSchema): ValidateFunction {
  return createSchemaAjv(schema).compile(schema as object);
}

/** Compiles a schema; throws with a readable message when the schema itself is invalid. */
export function compileSchema(schema: JsonSchema): SchemaValidator {
  const validate = compileRawSchema(schema);
  return (value) => {
    if (validate(value)) return { ok: true };
    const errors = (validate.errors ?? [])
      .map((e) => `${e.instancePath || '(root)'} ${describeError(e, value)}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`)
      .join('; ');
    return { ok: false, errors };
  };
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
