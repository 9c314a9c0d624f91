import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkAllowEntry } from '../../src/contract/allow-list.js';
import { createSchemaAjv } from '../../src/domain/json-schema.js';
import { COMPONENTS, componentSchemas } from '../../src/local-service/openapi.js';

/**
 * The local API's requests are parsed by the zod schemas of src/contract/, and its OpenAPI
 * document publishes JSON Schemas generated from the same schemas. Here a JSON Schema validator
 * (Ajv, with the document's one extension keyword, `x-allow-list-entry`, meaning the allow-list
 * parser) and zod judge generated bodies: a body the document accepts is one the server accepts,
 * and the other way round, for every request shape the document names.
 */

const NOW = '2025-05-01T10:00:00.000Z';
const COUNTS = { durationMs: 42_000, nSteps: 7, nAgentActions: 11, nScreenshots: 8, outputUrl: 'http://x/output.json', videoUrl: null, logsUrl: 'http://x/logs.jsonl' };

/** Each request shape the document names, and a body of it with every field given: the cases are edits of it. */
const REQUESTS: Record<string, Record<string, unknown>> = {
  WorkflowCreate: {
    name: 'Orders',
    description: 'Finds an order',
    prompt: 'Find the order',
    allowedDomains: ['shop.test', '*.bucket.r2.dev'],
    startUrl: 'https://shop.test/',
    payloadSchema: { type: 'object' },
    outputSchema: true,
    steps: ['open', 'search'],
    maxSteps: 20,
    timeoutMs: 60_000,
    model: 'claude-x',
    toolset: 'browser',
    allowJavascript: false,
    cache: true,
    approvals: ['pay'],
    humanTimeoutMs: 0,
    profile: 'tenant-a.crm',
    status: 'published',
    triggerType: 'schedule',
    scheduleExpression: '0 * * * *',
    configuration: { inputPayload: { order: 'A-1' } },
  },
  WorkflowUpdate: { name: 'Invoices', prompt: 'Find the invoice', startUrl: null, payloadSchema: null, maxSteps: 5, configuration: null },
  ExecuteRequest: { inputPayload: { order: 'A-1' } },
  StartedReport: { startedAt: NOW },
  CompletedReport: { completedAt: NOW, ...COUNTS },
  FailedReport: { failedAt: NOW, error: { code: 'timeout', message: 'ran out of time' }, ...COUNTS },
  WaitingReport: { waitingAt: NOW, kind: 'approval', question: 'Pay?', choices: ['yes', 'no'], timeoutAt: null },
  ResumedReport: { resumedAt: NOW, answeredBy: 'alice' },
  AnswerRequest: { answer: 'approve', decision: 'approve', by: 'ignored' },
  LiveInput: { kind: 'wheel', x: 0.5, y: 0.25, deltaX: 0, deltaY: 120 },
  LoginLinkRequest: { route: '#/executions', ttlSeconds: 900 },
  ApiKeyCreate: { name: 'ops team' },
};

const documentAjv = () => {
  const ajv = createSchemaAjv({ $schema: 'https://json-schema.org/draft/2020-12/schema' });
  ajv.addKeyword({ keyword: 'x-allow-list-entry', schemaType: 'boolean', type: 'string', validate: (_schema: unknown, entry: string) => checkAllowEntry(entry).ok });
  for (const schema of componentSchemas()) ajv.addSchema(schema);
  return ajv;
};

const shapeNamed = (name: string): z.ZodType => [...COMPONENTS].find(([, named]) => named === name)![0];

/** Values a client might put in any field: right and wrong types, edges of the ranges, words the shapes know. */
const WORDS = [
  '', ' ', 'p', '  p ', 'shop.test', ' shop.test:8443 ', '*.shop.test', '*.com', 'a.test/x', 'shop.test:99999', '[::1]:3000', 'https://shop.test/', 'not a url',
  'browser', 'computer', 'desktop', 'published', 'draft', 'manual', 'schedule', '0 * * * *', 'click', 'move', 'wheel', 'key', 'text', 'Enter', 'left', 'right',
  'approve', 'deny', 'question', 'approval', 'takeover', 'tenant-a.crm', '..', 'a/b', '#/executions', '#/bad path', 'ops@example', 'bootstrap-1', '-bad',
  'timeout', 'x'.repeat(201), 'yesterday', '2025-05-01T10:00:00.000Z', '2025-05-01T12:00:00+02:00', '2025-13-01T00:00:00Z',
];
const scalar = fc.oneof(
  fc.constantFrom(...WORDS),
  fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(null, true, false, 0, 1, -1, 0.5, 1.5, 2, 50, 200, 201, 10_000, 10_001, 86_400, 86_401, 2 ** 53, 2 ** 53 + 2, 30 * 86_400_000),
  fc.string({ maxLength: 12 }),
);
const value = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom({}, { type: 'object' }, { code: 'timeout', message: 'ran out' }, { code: '' }, { inputPayload: { order: 'A-1' } }) },
);

const REMOVE = Symbol('remove');

/** The full body with up to three fields (one it does not know included) changed or left out; now and then no object at all. */
const bodyOf = (full: Record<string, unknown>) => {
  const edit = fc.tuple(fc.constantFrom(...Object.keys(full), 'unknownField'), fc.oneof({ weight: 1, arbitrary: fc.constant(REMOVE) }, { weight: 4, arbitrary: value }));
  const edited = fc.array(edit, { maxLength: 3 }).map((edits) => {
    const body: Record<string, unknown> = { ...full };
    for (const [field, to] of edits) {
      if (to === REMOVE) delete body[field];
      else body[field] = to;
    }
    return body;
  });
  return fc.oneof({ weight: 12, arbitrary: edited }, { weight: 1, arbitrary: value });
};

describe('the published request schemas and the server', () => {
  const ajv = documentAjv();

  it('has a full body for every request shape the document names', () => {
    const named = componentSchemas().map((schema) => String(schema.$id));
    expect(named).toEqual(expect.arrayContaining(Object.keys(REQUESTS)));
    for (const [name, body] of Object.entries(REQUESTS)) expect(shapeNamed(name).safeParse(body).success, name).toBe(true);
  });

  it.each(Object.keys(REQUESTS))('%s: accept the same bodies', (name) => {
    const validate = ajv.getSchema(name)!;
    const shape = shapeNamed(name);
    fc.assert(
      fc.property(bodyOf(REQUESTS[name]!), (body) => {
        const byDocument = validate(body) === true;
        const byServer = shape.safeParse(body).success;
        expect({ body, byServer }).toEqual({ body, byServer: byDocument });
      }),
      { numRuns: 400 },
    );
  });
});
