import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileRawSchema, createSchemaAjv } from '../../src/domain/json-schema.js';
import { withValueAt, valueAt, type KeyPath } from '../../src/contract/key-path.js';
import { HttpError } from '../../src/local-service/http-errors.js';
import { assertKeptUncompared } from '../../src/local-service/kept-secrets.js';

/**
 * A kept secret is never compared with a value the caller sends beside it
 * (docs/security.md#secrets-at-rest). For generated schemas — objects and arrays nested to any
 * depth, arrays whose items are reached through `items`, a tuple (`prefixItems`, or draft 07's
 * `items` list), `contains` or a `$ref`, with `uniqueItems: true` on the array itself, in an
 * `allOf` of it or behind a `$ref` to it, or not at all — and secret leaves at any depth, the
 * check refuses exactly the kept secrets that sit in an array with `uniqueItems`, and the real
 * validator agrees: a copy of the item holding the secret put beside it gets another answer than
 * the same item with another value in the secret's place exactly then.
 */

type Model =
  | { kind: 'leaf'; secret: boolean }
  | { kind: 'object'; props: [string, Model][] }
  | { kind: 'array'; unique: 'none' | 'here' | 'allOf' | 'ref'; via: 'items' | 'tuple' | 'contains' | 'itemsRef'; children: Model[] };

const model = fc.letrec<{ node: Model }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('leaf' as const), secret: fc.boolean() }),
    fc.record({ kind: fc.constant('object' as const), props: fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c.d', 'x y'), tie('node')), { minLength: 1, maxLength: 3, selector: ([key]) => key }) }),
    fc.record({
      kind: fc.constant('array' as const),
      unique: fc.constantFrom('none' as const, 'here' as const, 'allOf' as const, 'ref' as const),
      via: fc.constantFrom('items' as const, 'tuple' as const, 'contains' as const, 'itemsRef' as const),
      children: fc.array(tie('node'), { minLength: 1, maxLength: 2 }),
    }),
  ),
})).node;

interface Built {
  schema: Record<string, unknown>;
  payload: unknown;
  /** Each secret leaf's path, and the paths of the arrays with uniqueItems above it. */
  secrets: { path: KeyPath; uniqueAbove: KeyPath[] }[];
  /** The arrays whose items are reached through `contains` (their path ids). */
  containsArrays: Set<string>;
}

function build(root: Model, draft: '07' | '2020'): Built {
  const defs: Record<string, unknown> = {};
  const defsKey = draft === '2020' ? '$defs' : 'definitions';
  const ref = (schema: unknown) => {
    const name = `d${Object.keys(defs).length}`;
    defs[name] = schema;
    return { $ref: `#/${defsKey}/${name}` };
  };
  let counter = 0;
  const secrets: Built['secrets'] = [];
  const containsArrays = new Set<string>();

  const walk = (node: Model, path: KeyPath, uniqueAbove: KeyPath[]): { schema: Record<string, unknown>; value: unknown } => {
    if (node.kind === 'leaf') {
      if (node.secret) secrets.push({ path, uniqueAbove });
      return { schema: node.secret ? { type: 'string', writeOnly: true } : { type: 'string' }, value: `v${counter++}` };
    }
    if (node.kind === 'object') {
      const properties: Record<string, unknown> = {};
      const value: Record<string, unknown> = {};
      for (const [key, child] of node.props) {
        const built = walk(child, [...path, key], uniqueAbove);
        properties[key] = built.schema;
        value[key] = built.value;
      }
      return { schema: { type: 'object', properties }, value };
    }
    const above = node.unique === 'none' ? uniqueAbove : [...uniqueAbove, path];
    // A tuple has a schema per child; otherwise one child's schema serves every item (two of them).
    const tuple = node.via === 'tuple';
    const itemModels = tuple ? node.children : [node.children[0]!, node.children[0]!];
    const items = itemModels.map((child, i) => walk(child, [...path, String(i)], above));
    const schema: Record<string, unknown> = { type: 'array' };
    if (tuple) schema[draft === '2020' ? 'prefixItems' : 'items'] = items.map((item) => item.schema);
    else if (node.via === 'items') schema.items = items[0]!.schema;
    else if (node.via === 'contains') {
      schema.contains = items[0]!.schema;
      containsArrays.add(JSON.stringify(path));
    }
    else schema.items = ref(items[0]!.schema);
    if (node.unique === 'here') schema.uniqueItems = true;
    if (node.unique === 'allOf') schema.allOf = [{ uniqueItems: true }];
    return { schema: node.unique === 'ref' ? ref({ ...schema, uniqueItems: true }) : schema, value: items.map((item) => item.value) };
  };

  const built = walk(root, [], []);
  const schema = { ...(draft === '2020' ? { $schema: 'https://json-schema.org/draft/2020-12/schema' } : {}), ...built.schema, [defsKey]: defs };
  return { schema, payload: built.value, secrets, containsArrays };
}

/** How many secrets a refusal names before it counts the rest (kept-secrets.ts). */
const NAMED_MAX = 20;

const pointer = (path: KeyPath) => path.map((key) => `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * The real validator's answer: with a copy of the item holding `secret` appended to `array`, does
 * the payload pass differently from the same copy with the secret changed? That is what a caller
 * would see. Arrays above reached by `contains` get their other items nulled (they match
 * nothing), so that the one item decides, as a caller would arrange it.
 */
function validatorCompares(built: Built, validate: (value: unknown) => boolean, secret: KeyPath, array: KeyPath): boolean {
  let payload = built.payload;
  for (let depth = 0; depth < array.length; depth++) {
    const above = secret.slice(0, depth);
    if (!built.containsArrays.has(JSON.stringify(above))) continue;
    const at = Number(secret[depth]);
    payload = withValueAt(payload, above, (valueAt(payload, above) as unknown[]).map((item, i) => (i === at ? item : null)));
  }
  const items = valueAt(payload, array) as unknown[];
  const item = items[Number(secret[array.length])];
  const same = validate(withValueAt(payload, array, [...items, structuredClone(item)]));
  const other = validate(withValueAt(payload, array, [...items, withValueAt(item, secret.slice(array.length + 1), 'fresh')]));
  return same !== other;
}

function refusal(kept: KeyPath[], payload: unknown, schema: unknown): unknown[] | undefined {
  try {
    assertKeptUncompared(kept, payload, schema);
    return undefined;
  } catch (error) {
    if (error instanceof HttpError && error.status === 422) return error.detail as unknown[];
    throw error;
  }
}

describe('a kept secret in an array with uniqueItems', () => {
  it('is refused exactly when the schema compares it with the items beside it, whatever its depth and however the array is reached', () => {
    fc.assert(
      fc.property(model, fc.constantFrom('07' as const, '2020' as const), (root, draft) => {
        const built = build(root, draft);
        const { schema, payload, secrets } = built;
        const validate = compileRawSchema(schema);
        expect(validate(payload), JSON.stringify(validate.errors)).toBe(true);
        for (const { path, uniqueAbove } of secrets) {
          const compared = uniqueAbove.length > 0;
          // The validator itself tells a copy of the secret's item from another in each array marked unique, and in no other.
          for (let depth = 0; depth < path.length; depth++) {
            const array = path.slice(0, depth);
            if (!Array.isArray(valueAt(payload, array))) continue;
            const marked = uniqueAbove.some((above) => above.length === depth);
            expect(validatorCompares(built, validate, path, array), `${JSON.stringify(schema)} at ${pointer(array)}`).toBe(marked);
          }
          const detail = refusal([path], payload, schema);
          if (compared) expect(detail).toEqual([expect.objectContaining({ loc: ['body', 'configuration', 'inputPayload', ...path], type: 'secret_compared' })]);
          else expect(detail).toBeUndefined();
        }
        // All kept at once: the refusal names exactly the compared ones, the first NAMED_MAX of
        // them, and counts the rest in one more issue (a schema of many secrets gets a readable answer).
        const detail = (refusal(secrets.map((s) => s.path), payload, schema) ?? []) as Array<{ loc: string[]; msg: string }>;
        const compared = secrets.filter((s) => s.uniqueAbove.length > 0).map((s) => s.path);
        expect(detail.slice(0, NAMED_MAX).map((issue) => issue.loc.slice(3))).toEqual(compared.slice(0, NAMED_MAX));
        if (compared.length > NAMED_MAX) {
          expect(detail).toHaveLength(NAMED_MAX + 1);
          expect(detail[NAMED_MAX]).toMatchObject({ loc: ['body', 'configuration', 'inputPayload'], type: 'secret_compared' });
          expect(detail[NAMED_MAX]!.msg).toContain(`and ${compared.length - NAMED_MAX} more`);
        } else expect(detail).toHaveLength(compared.length);
      }),
      { numRuns: 150 },
    );
  });

  it('names the first 20 of many compared secrets and counts the rest (the case a CI run drew: 32 under one uniqueItems array)', () => {
    const leafs = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`);
    const keys = leafs(32);
    const schema = { type: 'object', properties: { codes: { type: 'array', uniqueItems: true, items: { type: 'object', properties: Object.fromEntries(keys.map((k) => [k, { type: 'string', writeOnly: true }])) } } } };
    const payload = { codes: [Object.fromEntries(keys.map((k) => [k, 'x']))] };
    const detail = refusal(keys.map((k) => ['codes', '0', k]), payload, schema) as Array<{ loc: string[]; msg: string }>;
    expect(detail).toHaveLength(21);
    expect(detail[20]!.msg).toContain('and 12 more');
  });

  it('answers the same whatever the values beside the secret are', () => {
    const schema = { type: 'object', properties: { codes: { type: 'array', uniqueItems: true, items: { type: 'string', writeOnly: true } } } };
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 4 }), (guesses) => {
        const payload = { codes: ['{{codes.0}}', ...guesses] };
        expect(refusal([['codes', '0']], payload, schema)).toEqual(refusal([['codes', '0']], { codes: ['{{codes.0}}', 'x'] }, schema));
      }),
    );
  });
});

describe('the validator compares no value of the input with another', () => {
  it('keeps $data off: a {"$data": …} in const or maximum is a constant, never a pointer into the input', () => {
    for (const draft of [undefined, 'https://json-schema.org/draft/2020-12/schema']) {
      const ajv = createSchemaAjv(draft ? { $schema: draft } : undefined);
      expect(ajv.opts.$data).toBeFalsy();
      const schema = { ...(draft ? { $schema: draft } : {}), type: 'object', properties: { secret: { const: { $data: '1/guess' } }, guess: {} } };
      const validate = compileRawSchema(schema);
      // Were $data on, equal values would pass; as a constant, only the object itself does.
      expect(validate({ secret: '4821', guess: '4821' })).toBe(false);
      expect(validate({ secret: { $data: '1/guess' }, guess: '4821' })).toBe(true);
    }
  });
});
