/**
 * The JSON Schema of a contract shape, as the local API publishes it (docs/api.md): zod's own
 * generator (`z.toJSONSchema`) with the house conventions on top, so the document reads as it did
 * when the schemas were written by hand:
 *
 * - what a request may send (`io: "input"`): a field with a default is optional, and an object
 *   says nothing of the fields it does not list (zod's output mode adds `additionalProperties:
 *   false` to every object; an answer's reader must stay free to meet new fields);
 * - a nullable value is a type list (`["string", "null"]`), and so is a union of bare types (an
 *   object or a boolean), rather than an `anyOf`;
 * - a time says `format: "date-time"` without the long pattern zod adds beside it (the format
 *   says it: ISO 8601 with its zone, `2025-05-01T10:00:00.000Z`);
 * - a named shape is a `$ref` to `<name>#`, which @fastify/swagger turns into
 *   `#/components/schemas/<name>`.
 */
import { z } from 'zod';

export type JsonSchemaObject = Record<string, unknown>;

export interface JsonSchemaOptions {
  /** Shapes written as a reference (`{ "$ref": "<name>#" }`) wherever they appear, by name. */
  names?: ReadonlyMap<z.ZodType, string>;
}

/** The JSON Schema of `schema` (draft 2020-12, the dialect of OpenAPI 3.1), without `$schema`. */
export function toJsonSchema(schema: z.ZodType, opts: JsonSchemaOptions = {}): JsonSchemaObject {
  const names = opts.names ?? new Map<z.ZodType, string>();
  const own = names.get(schema);
  // The shape itself is generated in full (it is a component); its parts refer to the others.
  const registry = z.registry<{ id: string }>();
  for (const [shape, name] of names) if (shape !== schema) registry.add(shape, { id: name });
  const ROOT = '__root__';
  registry.add(schema, { id: ROOT });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'input',
    uri: (id) => `${id}#`,
    unrepresentable: 'any',
    override: ({ jsonSchema }) => tidy(jsonSchema as JsonSchemaObject),
  });
  const out = { ...(schemas[ROOT] as JsonSchemaObject) };
  delete out.$schema;
  delete out.$id;
  if (own !== undefined) delete out.id;
  return out;
}

/** The house conventions, applied to each generated schema in place. */
function tidy(json: JsonSchemaObject): void {
  tidyLeaf(json);
  if (!Array.isArray(json.anyOf)) return;
  // Members may be tidied after their union is: tidy them here too.
  const members = (json.anyOf as JsonSchemaObject[]).map((member) => {
    const copy = { ...member };
    tidy(copy);
    return copy;
  });
  const merged = typeList(members);
  if (merged) {
    delete json.anyOf;
    Object.assign(json, merged);
  }
}

/** A time without zod's pattern beside its format; a record of anything as a bare object. */
function tidyLeaf(json: JsonSchemaObject): JsonSchemaObject {
  if (json.format === 'date-time' && typeof json.pattern === 'string') delete json.pattern;
  // Any other field allowed (a loose object, a record of anything) is what an object says without a word.
  if (json.type === 'object' && isEmpty(json.additionalProperties)) {
    delete json.additionalProperties;
    if (json.properties === undefined && JSON.stringify(json.propertyNames) === '{"type":"string"}') delete json.propertyNames;
  }
  return json;
}

/**
 * One schema with a type list for members that differ only in their type: `{type: "string",
 * format}` and `{type: "null"}`, or `{type: "object"}` and `{type: "boolean"}`. Undefined when
 * more than one member says more than its type (they stay an `anyOf`).
 */
function typeList(members: JsonSchemaObject[]): JsonSchemaObject | undefined {
  const types: string[] = [];
  let rest: JsonSchemaObject = {};
  for (const member of members) {
    const { type, ...others } = member;
    const own = typeof type === 'string' ? [type] : Array.isArray(type) && type.every((t) => typeof t === 'string') ? (type as string[]) : undefined;
    if (!own) return undefined;
    types.push(...own);
    if (Object.keys(others).length === 0) continue;
    // Only one member may carry constraints (the nullable value's own).
    if (Object.keys(rest).length > 0) return undefined;
    rest = others;
  }
  return { ...rest, type: types };
}

function isEmpty(value: unknown): boolean {
  return value !== null && typeof value === 'object' && Object.keys(value).length === 0;
}
