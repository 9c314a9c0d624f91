/**
 * The OpenAPI 3.1 document the local API publishes (`GET /openapi.json`, docs/operations.md#the-local-api-and-dashboard),
 * as a client reads it: its paths, each with an operation per method, and its named schemas (the
 * components). @fastify/swagger writes it from the routes' own schemas (local-service/openapi.ts);
 * the JSON Schemas in it are left open here.
 */
import { z } from 'zod';
import { jsonObject } from './json.js';

/** The methods a path of the document may have an operation for. */
export const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** A body by its media type (`application/json`), with its JSON Schema. */
const openApiContent = z.record(z.string(), z.looseObject({ schema: jsonObject }));

/** One method of one path: what it takes and what it answers, by status. */
export const openApiOperation = z.looseObject({
  summary: z.string().optional(),
  description: z.string().optional(),
  parameters: z.array(jsonObject).optional(),
  requestBody: z.looseObject({ required: z.boolean().optional(), content: openApiContent }).optional(),
  responses: z.record(z.string(), z.looseObject({ description: z.string(), content: openApiContent.optional() })),
});

export const openApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string(), description: z.string().optional() }),
  /** Each path (`/api/workflows/{id}`) with its operations, by method; no other key. */
  paths: z.record(z.string(), z.partialRecord(z.enum(OPENAPI_METHODS), openApiOperation)),
  components: z.looseObject({ schemas: z.record(z.string(), jsonObject) }),
});
export type OpenApiDocument = z.infer<typeof openApiDocument>;
