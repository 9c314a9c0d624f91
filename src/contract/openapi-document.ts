/**
 * The OpenAPI 3.1 document the local API serves at `/openapi.json` (made from the routes' own
 * schemas, src/local-service/openapi.ts): the parts its readers use — the version, each path's
 * operations with their parameters, request bodies and answers, and the components (the named
 * schemas and the key scheme). Every part may carry more than is named here.
 */
import { z } from 'zod';
import { jsonObject } from './json.js';

/** A path, query or header parameter of an operation. */
export const openApiParameter = z.looseObject({
  name: z.string(),
  in: z.enum(['path', 'query', 'header', 'cookie']),
  required: z.boolean().optional(),
  schema: jsonObject.optional(),
});

/** One method of one path. */
export const openApiOperation = z.looseObject({
  summary: z.string().optional(),
  description: z.string().optional(),
  parameters: z.array(openApiParameter).optional(),
  requestBody: z.looseObject({ content: z.record(z.string(), z.looseObject({ schema: jsonObject })) }).optional(),
  /** By status code: each a description and, unless the answer has no body, its content's schema. */
  responses: z.record(z.string(), jsonObject),
});

export const openApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string(), description: z.string().optional() }),
  /** By path template (`/api/workflows/{id}`), then by method in lower case. */
  paths: z.record(z.string(), z.record(z.string(), openApiOperation)),
  components: z.looseObject({
    /** The named schemas, as JSON Schema. */
    schemas: z.record(z.string(), jsonObject),
    securitySchemes: z.record(z.string(), z.looseObject({ type: z.string() })),
  }),
});
