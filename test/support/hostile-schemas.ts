/**
 * Payload schemas and bodies that make validation cost far more than the body's size
 * (docs/secrets.md#bounds): what a workflow's author and its caller, together, can send. Each
 * body fills the given size limit.
 */

export interface HostileCase {
  name: string;
  schema: Record<string, unknown>;
  /** The payload as JSON text (a value nested 100,000 deep cannot go through JSON.stringify). */
  payloadText: string;
  /** What the refusal says. */
  expected: RegExp;
}

export function hostileBodies(maxBytes: number): HostileCase[] {
  // Room for `{"inputPayload": …}` and the harness's own framing.
  const room = maxBytes - 1_000;

  // uniqueItems on objects: Ajv compares every pair (n² deep equalities). One duplicate, last.
  const items: Array<{ a: number }> = [];
  for (let i = 0, size = 2; size + 20 < room; i += 1) {
    items.push({ a: i });
    size += JSON.stringify({ a: i }).length + 1;
  }
  items.push({ a: 0 });

  // anyOf over a recursive $ref: each level tries both branches, both fail at the bottom: 2^depth.
  let nested: unknown = 'leaf';
  for (let depth = 0; depth < 60; depth += 1) nested = [nested];

  // patternProperties: every key against every pattern.
  const patterns = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`^k${i}x|[0-9]{2,}z$`, { type: 'integer' }]));
  const keys: Record<string, number> = {};
  for (let i = 0, size = 2; size + 20 < room; i += 1) {
    keys[`key${i}`] = i;
    size += `"key${i}":${i},`.length;
  }

  // Deeper than any form: refused before anything walks it.
  const deep = `${'['.repeat(100_000)}1${']'.repeat(100_000)}`;

  return [
    { name: 'uniqueItems on objects', schema: { type: 'array', uniqueItems: true }, payloadText: JSON.stringify(items), expected: /duplicate items/ },
    {
      name: 'anyOf over a recursive $ref',
      schema: { $defs: { n: { anyOf: [{ type: 'array', items: { $ref: '#/$defs/n' } }, { type: 'array', items: { $ref: '#/$defs/n' }, minItems: 1 }] } }, $ref: '#/$defs/n' },
      payloadText: JSON.stringify(nested),
      expected: /could not be checked within/,
    },
    { name: 'patternProperties times every key', schema: { type: 'object', patternProperties: patterns, additionalProperties: { type: 'string' } }, payloadText: JSON.stringify(keys), expected: /could not be checked within|must be string/ },
    { name: 'nested 100,000 deep', schema: { type: 'array' }, payloadText: deep, expected: /nests deeper than 64/ },
  ];
}
