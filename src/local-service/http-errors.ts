import type { ErrorObject } from 'ajv';

/**
 * The errors of the local API. Every error answers the seed's error shape,
 * `{ "detail": [{ "loc": [...], "msg": "...", "type": "..." }] }`, whatever its status (401,
 * 404, 409, 413, 422), so a client reads one shape only (docs/operations.md#the-local-api-and-dashboard).
 */

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

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

function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}
