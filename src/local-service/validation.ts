import type { ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { checkAllowEntry } from '../domain/allow-list.js';
import { createSchemaAjv } from '../domain/json-schema.js';
import { depthProblem, sharedSchemaChecker } from '../domain/schema-check.js';
import type { SecretMark } from '../domain/secret-marks.js';
import { camelCaseFields, specificationJsonSchema, type JsonSchema, type Specification } from '../domain/specification.js';
import { KEY_NAME } from './api-keys.js';
import { isObject, issuesFromAjv, unprocessable } from './http-errors.js';
import { EXECUTION_STATUSES } from './store.js';
import { camelCaseTriggerFields, triggerProperties } from './version-triggers.js';

/**
 * Request validation of the local API. Bodies are checked against JSON Schemas (the same ones
 * the OpenAPI document publishes) and every fault becomes one `{loc, msg, type}` of the seed's
 * 422 `detail[]`: `loc` starts with `body`, `query` or `path`, `type` is the failed keyword.
 */

/**
 * `x-allow-list-entry`: the worker's own allow-list parser (domain/allow-list.ts) checks each
 * entry, so the API never stores an entry a worker would refuse (`*.com`, a bad port).
 */
const allowListEntry: ((schema: unknown, data: unknown) => boolean) & { errors?: Partial<ErrorObject>[] } = (_schema, data) => {
  const checked = checkAllowEntry(data);
  if (checked.ok) return true;
  allowListEntry.errors = [{ keyword: 'x-allow-list-entry', message: checked.reason, params: {} }];
  return false;
};

/** A schema admitting null too (a type list, so a fault reports one error, not three). */
const nullable = (schema: Record<string, unknown> = {}) => ({ ...schema, type: [...[schema.type as string | string[]].flat(), 'null'] });
const count = { type: 'integer', minimum: 0 } as const;
const url = { type: ['string', 'null'], maxLength: 4096 } as const;
/** The reports' counters and artifact urls (docs/api.md#completed), shared by the completed and failed reports. */
const reportCounters = { durationMs: count, nSteps: count, nAgentActions: count, nScreenshots: count, outputUrl: url, videoUrl: url, logsUrl: url } as const;

/** Specification fields, as the API takes them (camelCase): generated from the zod schema (docs/specification.md). */
const specification = specificationJsonSchema();
const specificationProperties = specification.properties;

const workflowLevelProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: 'string', maxLength: 10_000 },
} as const;

export const SPECIFICATION_FIELDS = Object.keys(specificationProperties) as (keyof Specification)[];
/** Fields that may be removed by a PATCH (sent as null). */
const OPTIONAL_SPEC_FIELDS: readonly string[] = SPECIFICATION_FIELDS.filter((f) => f !== 'prompt' && f !== 'allowedDomains');

export const schemas = {
  WorkflowCreate: {
    type: 'object',
    required: specification.required,
    properties: { ...workflowLevelProperties, ...specificationProperties, ...triggerProperties },
    description:
      'snake_case spellings (allowed_domains, start_url, payload_schema, output_schema, max_steps, timeout_ms, tool_set, allow_javascript, human_timeout_ms, trigger_type, schedule_expression) are accepted too.',
  },
  WorkflowUpdate: {
    type: 'object',
    minProperties: 1,
    properties: {
      ...workflowLevelProperties,
      ...Object.fromEntries(SPECIFICATION_FIELDS.map((f) => [f, OPTIONAL_SPEC_FIELDS.includes(f) ? nullable(specificationProperties[f]) : specificationProperties[f]])),
      ...triggerProperties,
    },
    description: 'Edited fields only; an optional specification field sent as null is removed. snake_case spellings are accepted too.',
  },
  ExecuteRequest: {
    type: 'object',
    properties: { inputPayload: { description: "Any JSON value; validated against the version's payloadSchema." } },
  },
  StartedReport: {
    type: 'object',
    required: ['startedAt'],
    properties: { startedAt: { type: 'string', format: 'date-time' } },
  },
  CompletedReport: {
    type: 'object',
    required: ['completedAt', 'durationMs', 'nSteps', 'nAgentActions', 'nScreenshots'],
    properties: {
      completedAt: { type: 'string', format: 'date-time' },
      ...reportCounters,
    },
  },
  FailedReport: {
    type: 'object',
    required: ['failedAt', 'error'],
    properties: {
      failedAt: { type: 'string', format: 'date-time' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { type: 'string', minLength: 1, maxLength: 100 }, message: { type: 'string', maxLength: 100_000 } },
      },
      ...reportCounters,
    },
  },
  WaitingReport: {
    type: 'object',
    required: ['waitingAt', 'kind', 'question'],
    properties: {
      waitingAt: { type: 'string', format: 'date-time' },
      kind: { type: 'string', enum: ['question', 'approval', 'takeover'] },
      question: { type: 'string', maxLength: 100_000 },
      choices: { type: ['array', 'null'], items: { type: 'string', maxLength: 1_000 }, maxItems: 50 },
      timeoutAt: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  ResumedReport: {
    type: 'object',
    required: ['resumedAt'],
    properties: { resumedAt: { type: 'string', format: 'date-time' }, answeredBy: { type: ['string', 'null'], maxLength: 200 } },
  },
  AnswerRequest: {
    type: 'object',
    properties: {
      answer: { type: 'string', minLength: 1, maxLength: 10_000, description: 'The answer: a choice, free text, "done" after a takeover. To an approval, only the exact word "approve" grants; better send `decision`.' },
      decision: { type: 'string', enum: ['approve', 'deny'], description: "A person's choice on an approval (the dashboard's Approve and Deny buttons): it decides, whatever `answer` says. Give `answer`, `decision` or both." },
      by: { type: 'string', maxLength: 200, description: 'Ignored: the answer is recorded under the signed-in identity (the key or session of the request).' },
    },
    additionalProperties: false,
  },
  LiveInput: {
    type: 'object',
    required: ['kind'],
    properties: {
      kind: { type: 'string', enum: ['click', 'move', 'wheel', 'key', 'text'] },
      x: { type: 'number', minimum: 0, maximum: 1, description: 'Pointer position as a fraction of the page width.' },
      y: { type: 'number', minimum: 0, maximum: 1, description: 'Pointer position as a fraction of the page height.' },
      button: { type: 'string', enum: ['left', 'middle', 'right'] },
      deltaX: { type: 'number', minimum: -10_000, maximum: 10_000 },
      deltaY: { type: 'number', minimum: -10_000, maximum: 10_000 },
      key: { type: 'string', minLength: 1, maxLength: 64, description: 'A key name (Enter, Tab, Backspace, ArrowDown, Control+a …).' },
      text: { type: 'string', minLength: 1, maxLength: 10_000, description: 'Text typed into the focused element; never logged.' },
    },
    additionalProperties: false,
  },
  LoginLinkRequest: {
    type: 'object',
    properties: {
      route: { type: 'string', pattern: '^#/[A-Za-z0-9/_.-]*$', maxLength: 300, description: 'Dashboard route the link opens, e.g. `#/executions/{id}`. Default `#/executions`.' },
      ttlSeconds: { type: 'integer', minimum: 1, maximum: 86_400, description: 'How long the link works. Default 900 (15 minutes).' },
    },
  },
  ApiKeyCreate: {
    type: 'object',
    required: ['name'],
    properties: {
      name: {
        type: 'string',
        pattern: KEY_NAME.source,
        description: "The key's name: 1–64 letters, digits, spaces and `._@-`, starting with a letter or digit; unique whatever its case; `bootstrap-<n>` is reserved. Requests made with the key carry it as their identity.",
      },
    },
    additionalProperties: false,
  },
} as const;

export type SchemaName = keyof typeof schemas;

/** Query strings: `limit`/`offset` of a list, and the executions list's filters. */
const page = {
  limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  offset: { type: 'integer', minimum: 0, default: 0 },
} as const;
export const pageQuery = { type: 'object', properties: page } as const;
export const executionQuery = {
  type: 'object',
  properties: {
    ...page,
    workflow_uuid: { type: 'string', description: 'Only executions of this workflow (`workflowId` is accepted too).' },
    status: { type: 'string', enum: EXECUTION_STATUSES },
  },
} as const;

/** Every request schema, shared by name: the routes refer to them and the OpenAPI document lists them. */
export function namedRequestSchemas(): { $id: string }[] {
  return Object.entries(schemas).map(([name, schema]) => ({ $id: name, ...schema }));
}

/**
 * Fastify's validator compiler: our Ajv (with the allow-list keyword and the named schemas) for
 * bodies and path parameters, and one that reads query strings' numbers and fills their defaults.
 */
export function requestValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodies = createSchemaAjv();
  bodies.addKeyword({ keyword: 'x-allow-list-entry', schemaType: 'boolean', type: 'string', errors: true, validate: allowListEntry });
  for (const schema of namedRequestSchemas()) bodies.addSchema(schema);
  const queries = createSchemaAjv(undefined, { coerceTypes: true, useDefaults: true });
  return ({ schema, httpPart }) => (httpPart === 'querystring' ? queries : bodies).compile(schema as object);
}

/** Accepts the snake_case spellings (docs/specification.md#fields); an explicit camelCase field wins. */
export function normaliseWorkflowBody(body: unknown): unknown {
  return isObject(body) ? camelCaseTriggerFields(camelCaseFields(body)) : body;
}

/** Throws 422 when a schema given in a workflow cannot be compiled (compiled off the event loop: docs/secrets.md#bounds). */
export async function checkSchemaCompiles(schema: unknown, loc: (string | number)[]): Promise<void> {
  if (schema === undefined || schema === null) return;
  const compiled = await sharedSchemaChecker().compile(schema as JsonSchema);
  if (!compiled.ok) throw unprocessable([{ loc, msg: `not a valid JSON Schema: ${compiled.reason}`, type: 'schema_invalid' }]);
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
      if (!checked.valid) throw unprocessable(issuesFromAjv(checked.errors, loc));
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
