import type { ErrorObject } from 'ajv';
import type { z } from 'zod';
import type { ValidationIssue } from '../contract/api-errors.js';

/**
 * The errors of the local API. Every error answers the service description's error shape,
 * `{ "detail": [{ "loc": [...], "msg": "...", "type": "..." }] }` (contract/api-errors.ts),
 * whatever its status (401, 404, 409, 413, 422), so a client reads one shape only
 * (docs/operations.md#the-local-api-and-dashboard).
 */

/** An answer other than success, thrown by handlers and written by the error handler (app.ts). */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  readonly detail: ValidationIssue[];

  constructor(status: number, detail: ValidationIssue[]) {
    super(detail.map((d) => d.msg).join('; '));
    this.status = status;
    this.detail = detail;
  }
}

export const notFound = (loc: (string | number)[], what: string): HttpError => new HttpError(404, [{ loc, msg: `${what} not found`, type: 'not_found' }]);

export const unprocessable = (detail: ValidationIssue[]): HttpError => new HttpError(422, detail);

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Ajv's errors as `detail[]` entries: `loc` is `prefix` (`body`, `query`, `path`) then the
 * faulty field's path, `type` the failed keyword (`missing` for a required field).
 */
export function issuesFromAjv(errors: readonly Partial<ErrorObject>[], prefix: (string | number)[]): ValidationIssue[] {
  return errors.map((e) => {
    const loc: (string | number)[] = [...prefix, ...pointerToPath(e.instancePath ?? '')];
    const params = (e.params ?? {}) as Record<string, unknown>;
    if (e.keyword === 'required' && typeof params.missingProperty === 'string') loc.push(params.missingProperty);
    if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') loc.push(params.additionalProperty);
    const msg = e.keyword === 'required' ? 'field required' : (e.message ?? 'is invalid');
    return { loc, msg, type: e.keyword === 'required' ? 'missing' : (e.keyword ?? 'invalid') };
  });
}

/**
 * zod's faults as `detail[]` entries, in the vocabulary the API documents: `loc` is `prefix` then
 * the field's path, `type` the JSON Schema keyword the fault fails (`missing` for a required
 * field, one entry per field a closed object does not take). Writing the keyword is ours: zod
 * names its faults by its own codes, the document promises JSON Schema's.
 */
export function issuesFromZod(issues: readonly z.core.$ZodIssue[], prefix: (string | number)[]): ValidationIssue[] {
  return issues.flatMap((issue): ValidationIssue[] => {
    const loc = [...prefix, ...issue.path.map((key) => (typeof key === 'number' ? key : String(key)))];
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ loc: [...loc, key], msg: 'must NOT have additional properties', type: 'additionalProperties' }));
    if (issue.code === 'invalid_type' && issue.input === undefined) return [{ loc, msg: 'field required', type: 'missing' }];
    return [{ loc, msg: issue.message, type: keywordOf(issue) }];
  });
}

function keywordOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
    case 'invalid_union':
      return 'type';
    case 'too_small':
    case 'too_big': {
      const edge = issue.code === 'too_small' ? 'min' : 'max';
      if (issue.origin === 'string') return `${edge}Length`;
      if (issue.origin === 'array' || issue.origin === 'set') return `${edge}Items`;
      if (issue.origin === 'object') return `${edge}Properties`;
      const word = edge === 'min' ? 'minimum' : 'maximum';
      return issue.inclusive === false ? `exclusive${word[0]!.toUpperCase()}${word.slice(1)}` : word;
    }
    case 'invalid_format':
      return issue.format === 'regex' || issue.format === 'starts_with' || issue.format === 'ends_with' || issue.format === 'includes' ? 'pattern' : 'format';
    case 'invalid_value':
      return 'enum';
    case 'not_multiple_of':
      return 'multipleOf';
    case 'custom':
      // A refinement names the keyword its JSON Schema states it with (`x-allow-list-entry`, `pattern`).
      return typeof issue.params?.keyword === 'string' ? issue.params.keyword : 'custom';
    default:
      return issue.code;
  }
}

function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}
