/**
 * What the wire shapes of src/contract/ share: a few field types, the text form of zod's faults,
 * and the snake_case spellings some readers accept (docs/specification.md#fields).
 *
 * Every file of this folder declares shapes that cross a process boundary (a job, a report, an
 * answer of the local API, a file the worker writes), once, as zod schemas: the types come from
 * `z.infer`, the parsers from the schemas, and the local API's JSON Schemas and OpenAPI document
 * are generated from them. The folder imports zod and a few pure checks of src/domain only, so
 * both programs (the worker and the local service) can use it.
 */
import { z } from 'zod';
import { depthReason, findTooDeep } from './json-bounds.js';
import { formatPath } from './key-path.js';

/**
 * `schema` refusing a value that nests deeper than `MAX_DEPTH` levels (docs/secrets.md#bounds),
 * with one fault at the path where it passes the bound; `keyword` is the fault's name (the
 * local API's `type`). Measured by a loop (contract/json-bounds.ts) after the shallow shape is
 * checked, so no step of the parse recurses into the value; a value within the bound is safe for
 * every later walk (a schema's compile, structured clone, JSON.stringify).
 */
export function boundedJson<T extends z.ZodType>(schema: T, keyword = 'too_deep'): T {
  return schema.superRefine((value, ctx) => {
    const fault = findTooDeep(value);
    if (fault) ctx.addIssue({ code: 'custom', message: depthReason(fault.max), path: [...fault.path], params: { keyword, maxDepth: fault.max } });
  });
}

/** A JSON Schema given inside a specification or a version: an object or a boolean, at most `MAX_DEPTH` deep. */
export const jsonSchemaValue = boundedJson(z.union([z.record(z.string(), z.unknown()), z.boolean()]));
export type JsonSchema = z.infer<typeof jsonSchemaValue>;

/** A JSON object with any fields, kept as it is (a row the API wrote, an answer). */
export const jsonObject = z.record(z.string(), z.unknown());

/** A JSON object with any fields that comes from outside (a version's configuration): at most `MAX_DEPTH` deep. */
export const boundedJsonObject = boundedJson(z.record(z.string(), z.unknown()));

/** Any JSON value from outside (an input payload): at most `MAX_DEPTH` deep. */
export const boundedJsonValue = boundedJson(z.unknown(), 'input_too_deep');

/** A time as ISO 8601 with its zone (`Date#toISOString` writes them). */
export const isoTime = z.iso.datetime({ offset: true });

/** A path into a JSON value whose keys come from outside (contract/key-path.ts): its keys, outermost first. */
export const keyPath = z.array(z.string()).readonly();

/** A count or a duration in milliseconds: a whole number, 0 or more. */
export const count = z.number().int().min(0);

/**
 * zod's faults as one line, each `path: message` (`allowedDomains.0: …`, `(root): …` for the
 * value itself). The path is written by formatPath, so a key of any spelling reads back as itself.
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map((issue) => `${issue.path.length ? formatPath(issue.path.map(String)) : '(root)'}: ${issue.message}`).join('; ');
}

/**
 * The snake_case spelling of each camelCase field of `fields` (`allowedDomains` →
 * `allowed_domains`), and `extra` spellings of a field, as a map from spelling to field, in the
 * order of the fields.
 */
export function snakeCaseAliases(fields: readonly string[], extra: Readonly<Record<string, string>> = {}): Readonly<Record<string, string>> {
  const aliases: Record<string, string> = {};
  for (const field of fields) {
    const snake = field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
    if (snake !== field) aliases[snake] = field;
    for (const [spelling, target] of Object.entries(extra)) if (target === field) aliases[spelling] = field;
  }
  return aliases;
}

/**
 * The fields of `raw` under their camelCase names (`aliases` maps a spelling to its field); an
 * explicit camelCase field wins over its snake_case twin.
 */
export function camelCaseFields(raw: Record<string, unknown>, aliases: Readonly<Record<string, string>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const camel = Object.hasOwn(aliases, key) ? aliases[key]! : key;
    if (camel !== key && Object.hasOwn(raw, camel)) continue;
    // An own data property whatever the key (`__proto__` included): nothing is set through a prototype.
    Object.defineProperty(out, camel, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
