import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { camelCaseFields, type JsonSchema } from '../contract/json.js';
import { SPECIFICATION_ALIASES } from '../contract/specification.js';
import { TRIGGER_ALIASES } from '../contract/workflows.js';
import { sharedSchemaChecker } from '../domain/schema-check.js';
import type { SecretMark } from '../domain/secret-marks.js';
import { isObject, issuesFromAjv, issuesFromZod, unprocessable } from './http-errors.js';
import { MAX_REWRITE_PATHS } from '../contract/key-path.js';
import { depthProblem } from '../contract/json-bounds.js';
import { maskSecretLocs } from './secret-loc.js';

/**
 * Request validation of the local API. Bodies, query strings and path parameters are parsed by
 * the zod schemas the routes declare (src/contract/), the ones the OpenAPI document is generated
 * from, so a handler receives exactly the type its schema infers. Every fault becomes one
 * `{loc, msg, type}` of the `detail[]` body: `loc` starts with `body`, `query` or `path`, `type`
 * is the JSON Schema keyword the fault fails (http-errors.ts). Input payloads are checked against
 * the payload schema a workflow gives, off the event loop (below).
 */

/** How `loc` names the part of the request Fastify validates. */
const PART: Readonly<Record<string, string>> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Fastify's validator compiler: each part parsed by its zod schema, or a 422 naming every fault. */
export function requestValidatorCompiler(): FastifySchemaCompiler<z.ZodType> {
  return ({ schema, httpPart }) => {
    const part = PART[httpPart ?? 'body'] ?? 'body';
    return (data) => {
      // `reportInput` tells a missing field (no input) from a wrong one; the input never reaches the answer.
      const parsed = schema.safeParse(data, { reportInput: true, error: defaultMessage });
      return parsed.success ? { value: parsed.data } : { error: unprocessable(issuesFromZod(parsed.error.issues, [part])) };
    };
  };
}

/**
 * The message of a fault whose schema gives none, in the words JSON Schema validators use (`must
 * be integer`, `must be >= 1`), as the API answered when it validated with Ajv; undefined leaves
 * zod's own.
 */
function defaultMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${jsonType(issue.expected)}`;
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      if (issue.origin === 'string') return `must NOT have ${small ? 'fewer' : 'more'} than ${String(bound)} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must NOT have ${small ? 'fewer' : 'more'} than ${String(bound)} items`;
      return `must be ${small ? '>' : '<'}${issue.inclusive ? '=' : ''} ${String(bound)}`;
    }
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue ? `must match pattern "${String(issue.pattern).replace(/^\/|\/[a-z]*$/g, '')}"` : `must match format "${issue.format === 'datetime' ? 'date-time' : issue.format}"`;
    case 'invalid_value':
      return 'must be equal to one of the allowed values';
    case 'invalid_union':
      return 'must match one of the allowed types';
    default:
      return undefined;
  }
}

/** zod's name of an expected type as JSON Schema names it. */
function jsonType(expected: string): string {
  if (expected === 'int') return 'integer';
  if (expected === 'record') return 'object';
  return expected;
}

/** Accepts the snake_case spellings of a workflow's fields (docs/specification.md#fields); a field given in both spellings is refused. */
export function normaliseWorkflowBody(body: unknown): unknown {
  if (!isObject(body)) return body;
  oneSpelling(body, SPECIFICATION_ALIASES);
  oneSpelling(body, TRIGGER_ALIASES);
  return camelCaseFields(camelCaseFields(body, SPECIFICATION_ALIASES), TRIGGER_ALIASES);
}

/**
 * The body as given when no field of it is spelt both ways (`allowed_domains` and
 * `allowedDomains`); else a 422 naming both: which one the caller meant cannot be known.
 */
export function oneSpelling(body: Record<string, unknown>, aliases: Readonly<Record<string, string>>): Record<string, unknown> {
  for (const [spelling, field] of Object.entries(aliases)) {
    if (spelling !== field && Object.hasOwn(body, spelling) && Object.hasOwn(body, field)) {
      throw unprocessable([{ loc: ['body', spelling], msg: `given twice, as ${spelling} and as ${field}: send one`, type: 'duplicate_field' }]);
    }
  }
  return body;
}

/** Throws 422 when a schema given in a workflow cannot be compiled (compiled off the event loop: docs/secrets.md#bounds). */
export async function checkSchemaCompiles(schema: unknown, loc: (string | number)[]): Promise<void> {
  if (schema === undefined || schema === null) return;
  const checker = sharedSchemaChecker();
  const compiled = await checker.compile(schema as JsonSchema);
  if (!compiled.ok) throw unprocessable([{ loc, msg: `not a valid JSON Schema: ${compiled.reason}`, type: 'schema_invalid' }]);
  // A schema that compiles may still never finish applying (`{"$ref": "#"}` refers to itself
  // without end): tried once on a value of each kind, so that it is refused here rather than at
  // every execution, or at the end of a run that has spent its budget.
  for (const probe of [null, {}, [], '', 0]) {
    const tried = await checker.check(schema as JsonSchema, probe);
    if (tried.kind === 'failed' || tried.kind === 'too_slow') {
      throw unprocessable([{ loc, msg: `not a usable JSON Schema: applying it to ${JSON.stringify(probe)} does not finish (${tried.reason})`, type: 'schema_invalid' }]);
    }
  }
}

/**
 * Validates `inputPayload` against a version's payload schema, off the event loop and within a
 * time budget (docs/secrets.md#bounds); throws 422 on failure. Answers the schema's secret marks
 * on the payload, found by the same check (none without a schema).
 */
export async function validateInputPayload(schema: unknown, payload: unknown, loc: (string | number)[] = ['body', 'inputPayload']): Promise<readonly SecretMark[]> {
  if (schema === undefined || schema === null) {
    const deep = depthProblem(payload);
    if (deep) throw unprocessable([{ loc, msg: `the input is refused: ${deep}`, type: 'input_too_deep' }]);
    return [];
  }
  const checked = await sharedSchemaChecker().check(schema as JsonSchema, payload, { marks: true });
  switch (checked.kind) {
    case 'checked':
      // Where the fault is, without the keys of a secret (secret-loc.ts).
      if (!checked.valid) throw unprocessable(maskSecretLocs(issuesFromAjv(checked.errors, loc), loc.length, checked.marks ?? []));
      // Masking more secrets than this is refused where it happens; here it is a 422 with a reason.
      if ((checked.marks?.length ?? 0) > MAX_REWRITE_PATHS) {
        throw unprocessable([{ loc, msg: `the input has ${checked.marks!.length} secret values; at most ${MAX_REWRITE_PATHS} are taken`, type: 'too_many_secrets' }]);
      }
      return checked.marks ?? [];
    case 'too_deep':
      throw unprocessable([{ loc, msg: `the input is refused: ${checked.reason}`, type: 'input_too_deep' }]);
    case 'too_slow':
      throw unprocessable([{ loc, msg: `the input is refused: ${checked.reason} against the payload schema`, type: 'validation_too_slow' }]);
    case 'invalid_schema':
      throw unprocessable([{ loc, msg: `the payload schema is not a valid JSON Schema: ${checked.reason}`, type: 'schema_invalid' }]);
    case 'failed':
      throw unprocessable([{ loc, msg: `the input could not be checked: ${checked.reason}`, type: 'validation_failed' }]);
  }
}
