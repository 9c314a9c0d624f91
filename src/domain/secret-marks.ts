import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import type { JsonSchema } from './specification.js';
import { safeRegExp } from './safe-regexp.js';

/**
 * Which input values a payload schema marks secret (docs/secrets.md#which-values-are-secret),
 * found the way the validator applies the schema: Ajv itself walks `$ref`/`$defs`, `items`,
 * `prefixItems`, `additionalProperties`, `patternProperties`, `allOf`/`anyOf`/`oneOf` and
 * `if`/`then`/`else`, and our versions of the `writeOnly`, `x-secret` and `format` keywords note
 * the instance path of every value a marking subschema was applied to. Reading property names
 * instead would miss every mark reached any other way.
 */
export interface SecretMark {
  /** JSON pointer of the value in the payload (`/login/password`). */
  pointer: string;
  /** `format: "totp"`: the value is a one-time-code seed. */
  totp: boolean;
}

export function findSecretMarks(payload: unknown, schema: JsonSchema): SecretMark[] {
  const marks = new Map<string, SecretMark>();
  const note = (pointer: string, totp: boolean) => {
    const known = marks.get(pointer);
    marks.set(pointer, { pointer, totp: totp || (known?.totp ?? false) });
  };
  const is2020 = typeof schema === 'object' && typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
  // allErrors: every branch of anyOf/oneOf is tried, so a mark in any matching branch is seen.
  const options = { allErrors: true, strict: false, validateFormats: false, code: { regExp: safeRegExp } } as const;
  const ajv = is2020 ? new Ajv2020(options) : new Ajv(options);
  ajv.removeKeyword('writeOnly');
  ajv.removeKeyword('format');
  const marker = (keyword: string, applies: (value: unknown) => boolean, totp: (value: unknown) => boolean) => {
    ajv.addKeyword({
      keyword,
      errors: false,
      validate: (value: unknown, data: unknown, _parent: unknown, cxt?: DataValidationCxt) => {
        if (applies(value) && cxt && data !== undefined && data !== null) note(cxt.instancePath, totp(value));
        return true;
      },
    });
  };
  marker('writeOnly', (v) => v === true, () => false);
  marker('x-secret', (v) => v === true, () => false);
  marker('format', (v) => v === 'totp', () => true);
  ajv.addKeyword({ keyword: 'x-file' });
  ajv.compile(schema as object)(payload);
  return [...marks.values()];
}

/** `/login/password` → `['login', 'password']`. */
export function pointerParts(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}
