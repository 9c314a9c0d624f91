/**
 * The error body of the local API, for every error status (401, 404, 409, 413, 415, 421, 422…):
 * the service description's 422 shape, `{ "detail": [{ "loc", "msg", "type" }] }`, so a client
 * reads one shape only (docs/operations.md#the-local-api-and-dashboard).
 */
import { z } from 'zod';

export const validationIssue = z.object({
  /** Where the fault is: `body`, `query`, `path` or `header`, then the field's path. */
  loc: z.array(z.union([z.string(), z.number().int()])),
  msg: z.string(),
  /** A JSON Schema keyword for a field that fails its schema (`missing` for a required one), else what went wrong (`not_found`, `conflict`…). */
  type: z.string(),
});
export type ValidationIssue = z.infer<typeof validationIssue>;

export const errorBody = z.object({ detail: z.array(validationIssue).optional() });
