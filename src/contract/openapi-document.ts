/**
 * The OpenAPI 3.1 document the local API publishes (`GET /openapi.json`,
 * docs/operations.md#the-local-api-and-dashboard), as a client reads it: the version, each path's
 * operations by method with their parameters, request bodies and answers, and the components (the
 * named schemas and the key scheme). @fastify/swagger writes it from the routes' own schemas
 * (local-service/openapi.ts); every part may carry more than is named here, and the JSON Schemas
 * in it are left open.
 */
import { z } from 'zod';
import { jsonObject } from './json.js';

/** The methods a path of the document may have an operation for. */
export const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** A JSON Schema of the document: a reference, or a schema whose properties and required fields are named. */
export const documentedSchema = z.looseObject({
  $ref: z.string().optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  required: z.array(z.string()).optional(),
});

/** A body by its media type (`application/json`), with its JSON Schema. */
const openApiContent = z.record(z.string(), z.looseObject({ schema: documentedSchema }));

/** A path, query or header parameter of an operation. */
export const openApiParameter = z.looseObject({
  name: z.string(),
  in: z.enum(['path', 'query', 'header', 'cookie']),
  required: z.boolean().optional(),
  schema: jsonObject.optional(),
});

/** One method of one path: what it takes and what it answers, by status. */
export const openApiOperation = z.looseObject({
  summary: z.string().optional(),
  description: z.string().optional(),
  parameters: z.array(openApiParameter).optional(),
  requestBody: z.looseObject({ required: z.boolean().optional(), content: openApiContent }).optional(),
  /** By status code: each a description and, unless the answer has no body, its content's schema. */
  responses: z.record(z.string(), z.looseObject({ description: z.string(), content: openApiContent.optional() })),
});

export const openApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string(), description: z.string().optional() }),
  /** Each path (`/api/workflows/{id}`) with its operations, by method in lower case; no other key. */
  paths: z.record(z.string(), z.partialRecord(z.enum(OPENAPI_METHODS), openApiOperation)),
  components: z.looseObject({
    /** The named schemas, as JSON Schema. */
    schemas: z.record(z.string(), documentedSchema),
    securitySchemes: z.record(z.string(), z.looseObject({ type: z.string() })),
  }),
});
export type OpenApiDocument = z.infer<typeof openApiDocument>;
