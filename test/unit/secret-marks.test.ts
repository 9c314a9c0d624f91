import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathId, type KeyPath } from '../../src/contract/key-path.js';
import { findSecretMarks } from '../../src/domain/secret-marks.js';
import type { JsonSchema } from '../../src/contract/json.js';

/**
 * The secret marks of a payload schema, found by walking the schema and the payload together
 * (docs/secrets.md#which-values-are-secret). The oracle is the validator itself: every value Ajv
 * applies a marked subschema to, under either draft, must be found by the walk.
 */

/** Where Ajv (draft 07 or 2020-12) applies a marked subschema to the payload. */
function ajvMarks(schema: JsonSchema, payload: unknown, draft: '07' | '2020'): Set<string> | undefined {
  const found = new Set<string>();
  const options = { allErrors: true, strict: false, validateFormats: false } as const;
  const ajv = draft === '2020' ? new Ajv2020(options) : new Ajv(options);
  ajv.removeKeyword('writeOnly');
  ajv.addKeyword({
    keyword: 'writeOnly',
    errors: false,
    validate: (value: unknown, data: unknown, _parent: unknown, cxt?: DataValidationCxt) => {
      if (value === true && cxt && data !== undefined && data !== null) found.add(pathId(pointerPath(cxt.instancePath)));
      return true;
    },
  });
  let validate;
  try {
    validate = ajv.compile(schema as object);
  } catch {
    return undefined;
  }
  // Without prototypes, so that Ajv sees own keys only (it reads `data.constructor` and
  // `data.__proto__` of a plain object as present).
  validate(withoutPrototypes(payload));
  return found;
}

function withoutPrototypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPrototypes);
  if (value === null || typeof value !== 'object') return value;
  const copy = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) copy[k] = withoutPrototypes(v);
  return copy;
}

function pointerPath(pointer: string): KeyPath {
  return pointer === '' ? [] : pointer.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

// `__proto__` is left to the key tests (secret-keys.test.ts): Ajv, the oracle here, reads it
// through the prototype in places (`additionalProperties` counts it as additional whatever
// `properties` says).
const keys = fc.constantFrom('a', 'b', 'c', 'a.b', 'constructor', 'toString');
const mark = fc.constantFrom({ writeOnly: true }, { type: 'string', writeOnly: true }, {});

/** Schemas built from the keywords that apply subschemas, in both drafts' spellings. */
const { schema } = fc.letrec<{ schema: Record<string, unknown> }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    mark,
    fc.dictionary(keys, tie('schema'), { maxKeys: 3 }).map((properties) => ({ type: 'object', properties: asJson(properties) })),
    fc.tuple(fc.constantFrom('^a', 'b$', '\\.', '^_'), tie('schema')).map(([pattern, sub]) => ({ patternProperties: { [pattern]: sub } })),
    fc.tuple(fc.dictionary(keys, tie('schema'), { maxKeys: 2 }), tie('schema')).map(([properties, additional]) => ({ properties: asJson(properties), additionalProperties: additional })),
    tie('schema').map((items) => ({ type: 'array', items })),
    fc.array(tie('schema'), { maxLength: 3 }).map((tuple) => ({ prefixItems: tuple })),
    fc.tuple(fc.array(tie('schema'), { maxLength: 3 }), tie('schema')).map(([tuple, additionalItems]) => ({ items: tuple, additionalItems })),
    fc.tuple(fc.constantFrom('allOf', 'anyOf', 'oneOf'), fc.array(tie('schema'), { minLength: 1, maxLength: 3 })).map(([k, list]) => ({ [k]: list })),
    fc.tuple(tie('schema'), tie('schema'), tie('schema')).map(([i, t, e]) => ({ if: i, then: t, else: e })),
    fc.tuple(keys, tie('schema')).map(([k, sub]) => ({ dependentSchemas: asJson({ [k]: sub }) })),
    fc.tuple(keys, tie('schema')).map(([k, sub]) => ({ dependencies: asJson({ [k]: sub }) })),
    // Each a resource of its own (`$id`), so that its pointer resolves wherever it is nested.
    fc.tuple(fc.nat(99), tie('schema')).map(([n, sub]) => ({ $id: `d${n}.json`, $defs: { d: sub }, allOf: [{ $ref: '#/$defs/d' }] })),
    fc.tuple(fc.nat(99), tie('schema')).map(([n, sub]) => ({ $id: `e${n}.json`, definitions: { 'd e': sub }, allOf: [{ $ref: `e${n}.json#/definitions/d%20e` }] })),
    fc.tuple(fc.nat(99), tie('schema')).map(([n, sub]) => ({ $defs: { a: { $anchor: `a${n}`, ...sub } }, allOf: [{ $ref: `#a${n}` }] })),
    tie('schema').map((sub) => ({ contains: sub })),
  ),
}));

/** Keys such as `__proto__` kept as own properties, as a JSON body would have them. */
function asJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v)) : v))) as T;
}

const payload = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string({ maxLength: 4 }),
    fc.integer(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(keys, tie('value'), { maxKeys: 3 }).map((d) => JSON.parse(JSON.stringify(d)) as unknown),
  ),
})).value;

describe('secret marks', () => {
  it('finds every value the validator applies a marked subschema to, under either draft, and no prototype changes', () => {
    fc.assert(
      fc.property(schema, payload, (s, p) => {
        const expected = (['07', '2020'] as const).map((draft) => [draft, ajvMarks(s as JsonSchema, p, draft)] as const).filter(([, marks]) => marks !== undefined);
        // A schema neither draft compiles (a reference to nowhere) never reaches the walk.
        fc.pre(expected.length > 0);
        const found = new Set(findSecretMarks(p, s as JsonSchema).map((m) => pathId(m.path)));
        for (const [draft, marks] of expected) {
          for (const id of marks!) expect(found, `${draft}: ${id} in ${JSON.stringify(s)} on ${JSON.stringify(p)}`).toContain(id);
        }
        expect(({} as Record<string, unknown>).writeOnly).toBeUndefined();
      }),
      { numRuns: 100 },
    );
  });

  it('follows $ref by $id and $anchor, and ends on a recursive schema', () => {
    const schema = {
      $id: 'https://example.test/root.json',
      type: 'object',
      properties: { node: { $ref: 'node.json' }, card: { $ref: '#card' } },
      $defs: {
        node: { $id: 'node.json', type: 'object', properties: { secret: { writeOnly: true }, next: { $ref: '#' } } },
        card: { $anchor: 'card', properties: { pin: { 'x-secret': true } } },
      },
    };
    const marks = findSecretMarks({ node: { secret: 's1', next: { secret: 's2', next: {} } }, card: { pin: '1234' } }, schema);
    expect(marks.map((m) => m.path)).toEqual([['node', 'secret'], ['node', 'next', 'secret'], ['card', 'pin']]);
  });

  it('marks a value under a branch whatever its condition says, and a one-time-code seed as such', () => {
    const schema = { if: { properties: { kind: { const: 'card' } } }, then: { properties: { pin: { writeOnly: true } } }, else: { properties: { seed: { format: 'totp' } } } };
    expect(findSecretMarks({ kind: 'bank', pin: '1', seed: 'JBSWY3DPEHPK3PXP' }, schema)).toEqual([
      { path: ['pin'], totp: false },
      { path: ['seed'], totp: true },
    ]);
  });

  it('refuses a reference that names no schema of the document', () => {
    expect(() => findSecretMarks({}, { $ref: '#/$defs/missing' })).toThrow(expect.objectContaining({ code: 'invalid_specification' }));
  });
});
