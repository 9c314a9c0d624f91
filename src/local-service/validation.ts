import type { ErrorObject, ValidateFunction } from 'ajv';
import { compileRawSchema, createSchemaAjv } from '../domain/json-schema.js';
import { camelCaseFields, type JsonSchema } from '../domain/specification.js';
import { isObject, unprocessable, type ValidationIssue } from './http-utils.js';
import { EXECUTION_STATUSES, type ExecutionStatus } from './store.js';
import { camelCaseTriggerFields, triggerProperties } from './version-triggers.js';

/**
 * Request validation of the local API. Bodies are checked against JSON Schemas (the same ones
 * the OpenAPI document publishes) and every fault becomes one `{loc, msg, type}` of the seed's
 * 422 `detail[]`: `loc` starts with `body`, `query` or `path`, `type` is the failed keyword.
 */

const requestAjv = createSchemaAjv();

const jsonSchemaValue = { type: ['object', 'boolean'] } as const;
/** The same schema admitting null too (a type list, so a fault reports one error, not three). */
const nullable = (schema: { type: string | readonly string[] }) => ({ ...schema, type: [...(Array.isArray(schema.type) ? schema.type : [schema.type]), 'null'] });
const count = { type: 'integer', minimum: 0 } as const;
const url = { type: ['string', 'null'], maxLength: 4096 } as const;
/** Contract §2's counters and artifact urls, shared by the completed and failed reports. */
const reportCounters = { durationMs: count, nSteps: count, nAgentActions: count, nScreenshots: count, outputUrl: url, videoUrl: url, logsUrl: url } as const;

/** Specification fields of contract §3, as the API takes them (camelCase). */
const specificationProperties = {
  prompt: { type: 'string', minLength: 1, pattern: '\\S', description: 'The business process, in words.' },
  allowedDomains: {
    type: 'array',
    minItems: 1,
    items: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[^\\s/?#@]+$' },
    description: 'Hosts the browser may reach: `example.com`, or `*.example.com` for it and its subdomains.',
  },
  startUrl: { type: 'string', format: 'uri', description: 'First page; must be allowed.' },
  payloadSchema: { ...jsonSchemaValue, description: 'JSON Schema of the input payload.' },
  outputSchema: { ...jsonSchemaValue, description: "JSON Schema of the agent's output." },
  steps: { type: 'array', items: { type: 'string' }, description: 'Ordered checklist completing the process.' },
  maxSteps: { type: 'integer', minimum: 1, maximum: 10_000 },
  timeoutMs: { type: 'integer', minimum: 1 },
  model: { type: 'string', minLength: 1 },
  toolset: { type: 'string', enum: ['browser', 'computer'], description: "The agent's action space: the browser toolset (default where the model supports it) or computer use." },
  allowJavascript: { type: 'boolean', description: "Enables the browser toolset's javascript_exec (default false)." },
  cache: { type: 'boolean', description: "Use and update this version's run cache (default true)." },
} as const;

const workflowLevelProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: 'string', maxLength: 10_000 },
} as const;

export const SPECIFICATION_FIELDS = Object.keys(specificationProperties) as (keyof typeof specificationProperties)[];
/** Fields that may be removed by a PATCH (sent as null). */
const OPTIONAL_SPEC_FIELDS: readonly string[] = SPECIFICATION_FIELDS.filter((f) => f !== 'prompt' && f !== 'allowedDomains');

export const schemas = {
  WorkflowCreate: {
    type: 'object',
    required: ['prompt', 'allowedDomains'],
    properties: { ...workflowLevelProperties, ...specificationProperties, ...triggerProperties },
    description:
      'snake_case spellings (allowed_domains, start_url, payload_schema, output_schema, max_steps, timeout_ms, tool_set, allow_javascript, trigger_type, schedule_expression) are accepted too.',
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
  LoginLinkRequest: {
    type: 'object',
    properties: {
      route: { type: 'string', pattern: '^#/[A-Za-z0-9/_.-]*$', maxLength: 300, description: 'Dashboard route the link opens, e.g. `#/executions/{id}`. Default `#/executions`.' },
      ttlSeconds: { type: 'integer', minimum: 1, maximum: 86_400, description: 'How long the link works. Default 900 (15 minutes).' },
    },
  },
} as const;

export type SchemaName = keyof typeof schemas;

const compiled = new Map<SchemaName, ValidateFunction>();

/** Validates a request body; throws 422 with every fault. */
export function validateBody<T>(name: SchemaName, body: unknown): T {
  let validate = compiled.get(name);
  if (!validate) {
    validate = requestAjv.compile(schemas[name]);
    compiled.set(name, validate);
  }
  if (!validate(body)) throw unprocessable(toIssues(validate.errors ?? [], ['body']));
  return body as T;
}

/** Accepts contract §3's snake_case spellings; an explicit camelCase field wins. */
export function normaliseWorkflowBody(body: unknown): unknown {
  return isObject(body) ? camelCaseTriggerFields(camelCaseFields(body)) : body;
}

/** Throws 422 when a schema given in a workflow cannot be compiled. */
export function checkSchemaCompiles(schema: unknown, loc: (string | number)[]): void {
  if (schema === undefined || schema === null) return;
  try {
    compilePayloadSchema(schema);
  } catch (error) {
    throw unprocessable([{ loc, msg: `not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`, type: 'schema_invalid' }]);
  }
}

const payloadValidators = new Map<string, ValidateFunction>();

function compilePayloadSchema(schema: unknown): ValidateFunction {
  const cacheKey = JSON.stringify(schema);
  const cached = payloadValidators.get(cacheKey);
  if (cached) return cached;
  const validate = compileRawSchema(schema as JsonSchema);
  // A small cache: a local API sees few distinct schemas, and each compile builds code.
  if (payloadValidators.size > 100) payloadValidators.clear();
  payloadValidators.set(cacheKey, validate);
  return validate;
}

/** Validates `inputPayload` against a version's payload schema; throws 422 on failure. */
export function validateInputPayload(schema: unknown, payload: unknown, loc: (string | number)[] = ['body', 'inputPayload']): void {
  if (schema === undefined || schema === null) return;
  const validate = compilePayloadSchema(schema);
  if (!validate(payload)) throw unprocessable(toIssues(validate.errors ?? [], loc));
}

export interface ExecutionListQuery {
  limit: number;
  offset: number;
  workflowId?: string;
  status?: ExecutionStatus;
}

/** `limit` (1–200, default 50), `offset` (default 0), `workflow_uuid`, `status`. */
export function parseExecutionQuery(query: URLSearchParams): ExecutionListQuery {
  const issues: ValidationIssue[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = query.get(name);
    if (raw === null || raw === '') return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      issues.push({ loc: ['query', name], msg: `must be an integer from ${min} to ${max}`, type: 'int_range' });
      return fallback;
    }
    return Number(raw);
  };
  const result: ExecutionListQuery = { limit: integer('limit', 50, 1, 200), offset: integer('offset', 0, 0, Number.MAX_SAFE_INTEGER) };
  const workflowId = query.get('workflow_uuid') ?? query.get('workflowId');
  if (workflowId) result.workflowId = workflowId;
  const status = query.get('status');
  if (status) {
    if ((EXECUTION_STATUSES as readonly string[]).includes(status)) result.status = status as ExecutionStatus;
    else issues.push({ loc: ['query', 'status'], msg: `must be one of ${EXECUTION_STATUSES.join(', ')}`, type: 'enum' });
  }
  if (issues.length > 0) throw unprocessable(issues);
  return result;
}

/** `limit`/`offset` of the workflows list. */
export function parsePage(query: URLSearchParams): { limit: number; offset: number } {
  const { limit, offset } = parseExecutionQuery(new URLSearchParams([...query].filter(([k]) => k === 'limit' || k === 'offset')));
  return { limit, offset };
}

function toIssues(errors: ErrorObject[], prefix: (string | number)[]): ValidationIssue[] {
  return errors.map((e) => {
      const loc: (string | number)[] = [...prefix, ...pointerToPath(e.instancePath)];
      const params = e.params as Record<string, unknown>;
      if (e.keyword === 'required' && typeof params.missingProperty === 'string') loc.push(params.missingProperty);
      if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') loc.push(params.additionalProperty);
      const msg = e.keyword === 'required' ? 'field required' : (e.message ?? 'is invalid');
      return { loc, msg, type: e.keyword === 'required' ? 'missing' : e.keyword };
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
