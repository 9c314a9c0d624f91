import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { executeRequest } from '../../src/contract/executions.js';
import { readSpecification } from '../../src/contract/specification.js';
import { workflowCreate } from '../../src/contract/workflows.js';
import { findTooDeep, MAX_DEPTH } from '../../src/contract/json-bounds.js';
import { formatPath, valueAt } from '../../src/contract/key-path.js';
import { createSchemaChecker } from '../../src/domain/schema-check.js';

/**
 * The depth bound of values from outside (docs/secrets.md#bounds): for any nesting depth and any
 * mix of objects and arrays, the measure and every contract field that uses it accept a value
 * at most MAX_DEPTH levels deep and refuse a deeper one, naming where, without throwing, however
 * deep the value (deeper than any recursion could walk).
 */

/** One level of nesting: an object under `key` or an array with the child at `index`, with shallow siblings. */
const level = fc.record({
  array: fc.boolean(),
  key: fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', 'a.b', '["x"]')),
  index: fc.nat({ max: 2 }),
  sibling: fc.constantFrom(null, 1, 'x', true, {}, [], { k: 'v' }, [1, 'y']),
});
type Level = typeof level extends fc.Arbitrary<infer T> ? T : never;

/** A value `levels.length` containers deep (a scalar for none), built from the inside out by a loop. */
function nest(levels: readonly Level[]): unknown {
  let value: unknown = 'leaf';
  for (let i = levels.length - 1; i >= 0; i--) {
    const { array, key, index, sibling } = levels[i]!;
    // A sibling never deepens the value: at most one level, and only beside a child that is a container too.
    const side = i === levels.length - 1 ? null : sibling;
    if (array) {
      const items: unknown[] = [side, side];
      items.splice(index, 0, value);
      value = items;
    } else {
      const obj: Record<string, unknown> = {};
      Object.defineProperty(obj, key === 'side' ? 'side2' : 'side', { value: side, enumerable: true, writable: true, configurable: true });
      Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
      value = obj;
    }
  }
  return value;
}

/** Depths around the bound mostly, and far past any stack now and then. */
const depth = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: MAX_DEPTH * 2 }) }, { weight: 1, arbitrary: fc.integer({ min: MAX_DEPTH * 2, max: 12_000 }) });
const nested = depth.chain((d) => fc.array(level, { minLength: d, maxLength: d }));

describe('findTooDeep', () => {
  it('accepts any value at most MAX_DEPTH deep and refuses a deeper one at a path MAX_DEPTH keys long to a container', () => {
    fc.assert(
      fc.property(nested, (levels) => {
        const value = nest(levels);
        const fault = findTooDeep(value);
        if (levels.length <= MAX_DEPTH) {
          expect(fault).toBeUndefined();
          return;
        }
        expect(fault?.max).toBe(MAX_DEPTH);
        expect(fault!.path).toHaveLength(MAX_DEPTH);
        const at = valueAt(value, fault!.path);
        expect(typeof at === 'object' && at !== null).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('ends on a value that is not a tree: a cycle is too deep, a shared node is walked once per depth', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(findTooDeep(cycle)?.path).toHaveLength(MAX_DEPTH);
    // 2^60 paths through 60 shared levels; only 60 nodes.
    let shared: unknown = {};
    for (let i = 0; i < 60; i++) shared = [shared, shared];
    expect(findTooDeep(shared)).toBeUndefined();
  });

  it('handles a million levels without recursion', () => {
    let value: unknown = 0;
    for (let i = 0; i < 1_000_000; i++) value = [value];
    expect(findTooDeep(value)?.path).toEqual(Array.from({ length: MAX_DEPTH }, () => '0'));
  });
});

/** The contract's fields from outside, each with how to parse a value put there and the path of the field. */
const FIELDS: Array<{ field: string; around: number; parse: (value: unknown) => { success: boolean; issues: { path: PropertyKey[]; message: string }[] }; wrap: (value: unknown) => unknown }> = [
  ...(['payloadSchema', 'outputSchema'] as const).map((field) => ({
    field,
    around: 2,
    wrap: (value: unknown) => ({ type: 'object', properties: { x: value } }),
    parse: (value: unknown) => {
      const read = readSpecification({ prompt: 'p', allowedDomains: ['example.com'], [field]: value });
      return { success: read.ok, issues: read.ok ? [] : [{ path: [field], message: read.reason }] };
    },
  })),
  {
    field: 'configuration',
    around: 1,
    wrap: (value: unknown) => ({ inputPayload: value }),
    parse: (value: unknown) => {
      const parsed = workflowCreate.safeParse({ prompt: 'p', allowedDomains: ['example.com'], configuration: value });
      return { success: parsed.success, issues: parsed.error?.issues ?? [] };
    },
  },
  {
    field: 'inputPayload',
    around: 0,
    wrap: (value: unknown) => value,
    parse: (value: unknown) => {
      const parsed = executeRequest.safeParse({ inputPayload: value });
      return { success: parsed.success, issues: parsed.error?.issues ?? [] };
    },
  },
];

describe('bounded JSON fields of the contract', () => {
  it.each(FIELDS.map((f) => [f.field, f] as const))('%s: accepted up to the bound, refused past it with the path and the bound, never a throw', (_name, { field, around, parse, wrap }) => {
    fc.assert(
      fc.property(nested, (levels) => {
        const value = wrap(nest(levels));
        const total = levels.length + around;
        let result: ReturnType<typeof parse> | undefined;
        expect(() => (result = parse(value))).not.toThrow();
        expect(result!.success).toBe(total <= MAX_DEPTH);
        if (total <= MAX_DEPTH) return;
        const fault = findTooDeep(value)!;
        const text = result!.issues.map((i) => `${formatPath(i.path.map(String))}: ${i.message}`).join('; ');
        expect(text).toContain(`deeper than ${MAX_DEPTH} levels`);
        if (field !== 'payloadSchema' && field !== 'outputSchema') expect(result!.issues[0]!.path.map(String)).toEqual([field, ...fault.path]);
        else expect(text).toContain(`${formatPath([field, ...fault.path])}: it nests deeper than ${MAX_DEPTH} levels`);
      }),
      { numRuns: 120 },
    );
  });
});

describe('the schema checker on what cannot be sent to its thread', () => {
  const checker = createSchemaChecker({ threads: 1 });
  afterAll(() => checker.close());

  const deepSchema = (levels: number): Record<string, unknown> => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < levels; i++) schema = { type: 'array', items: schema };
    return schema;
  };

  it('refuses a schema nested 10,000 deep with a reason, on compile and on check, and keeps serving', async () => {
    expect(await checker.compile(deepSchema(10_000))).toEqual({ ok: false, reason: expect.stringContaining(`deeper than ${MAX_DEPTH} levels`) });
    expect(await checker.check(deepSchema(10_000), [])).toMatchObject({ kind: 'invalid_schema' });
    expect(await checker.compile(deepSchema(MAX_DEPTH - 1))).toEqual({ ok: true });
  });

  it('answers failed, not a rejection, when structured clone refuses the request, and the thread stays usable', async () => {
    const unclonable = { type: 'object', default: () => 1 } as unknown as Record<string, unknown>;
    expect(await checker.compile(unclonable)).toEqual({ ok: false, reason: expect.stringContaining('could not be sent') });
    expect(await checker.check({ type: 'object' }, { f: () => 1 })).toMatchObject({ kind: 'failed' });
    expect(await checker.check({ type: 'integer' }, 3)).toMatchObject({ kind: 'checked', valid: true });
  });
});
