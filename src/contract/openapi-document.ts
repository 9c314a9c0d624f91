/**
 * The OpenAPI document the local API publishes at `/openapi.json` (made from the routes' own
 * schemas, local-service/openapi.ts), as far as its readers rely on it: its version, each path's
 * operations with their request bodies and answers, and the named schemas. Every other field is
 * kept as sent.
 */
import { z } from 'zod';
import { jsonObject } from './json.js';

/** A JSON Schema of the document: a reference, or a schema whose properties and required fields are named. */
export const documentedSchema = z.looseObject({
  $ref: z.string().optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  required: z.array(z.string()).optional(),
});

/** One operation (a method of a path). */
export const openApiOperation = z.looseObject({
  summary: z.string().optional(),
  requestBody: z.looseObject({ content: z.record(z.string(), z.looseObject({ schema: documentedSchema })) }).optional(),
  responses: z.record(z.string(), jsonObject),
});

export const openApiDocument = z.looseObject({
  openapi: z.string(),
  /** Each path (`{param}` for a parameter), its operations by method in lower case. */
  paths: z.record(z.string(), z.record(z.string(), openApiOperation)),
  components: z.looseObject({ schemas: z.record(z.string(), documentedSchema) }),
});
export type OpenApiDocument = z.infer<typeof openApiDocument>;
