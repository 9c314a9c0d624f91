import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { execution, type ExecutionRow } from '../../src/contract/executions.js';
import { createApp, type App } from '../../src/local-service/app.js';
import { answer, commonErrors, pathParams } from '../../src/local-service/openapi.js';
import type { Logger } from '../../src/telemetry/types.js';

/**
 * The local service's answers are checked against their routes' schemas on the way out: a
 * handler that answers a wrong shape is a 500 (and a logged error), never a body sent; a field
 * the shape does not declare is left out. Requests are parsed by the same kind of schema, so a
 * handler reads the typed, parsed values.
 */

const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string | undefined }> = [];
const logger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (fields, msg) => void lines.push({ level: 'warn', fields, msg }),
  error: (fields, msg) => void lines.push({ level: 'error', fields, msg }),
  child: () => logger,
};

let app: App | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  lines.length = 0;
});

const row: ExecutionRow = {
  execution_uuid: 'e1',
  workflow_version_uuid: 'v1',
  workflow_uuid: 'w1',
  workflow_name: 'Orders',
  version: 1,
  created_at: '2025-05-01T10:00:00.000Z',
  updated_at: '2025-05-01T10:00:00.000Z',
  status: 'queued',
  trigger: 'manual',
  input_payload: null,
  duration_ms: null,
  n_steps: 0,
  n_agent_actions: 0,
  n_screenshots: 0,
  output_url: null,
  video_url: null,
  logs_url: null,
  started_at: null,
  completed_at: null,
  failed_at: null,
  error: null,
};

/** One route answering `body` as an execution, the way the service's routes declare their answers. */
function serve(body: unknown): App {
  app = createApp(logger).app;
  // The handler's type would refuse a wrong body: the cast stands for a bug the types did not see (a value read from elsewhere).
  app.get('/answer', { schema: { response: { 200: answer('The execution.', execution), ...commonErrors } } }, async () => body as ExecutionRow);
  return app;
}

describe('answers', () => {
  it('sends an answer of its declared shape', async () => {
    const res = await serve(row).inject({ method: 'GET', url: '/answer' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(row);
  });

  it.each([
    ['a field of the wrong type', { ...row, n_steps: 'seven' }],
    ['a required field missing', { ...row, status: undefined }],
    ['a status no execution has', { ...row, status: 'paused' }],
    ['no object at all', 'e1'],
    ['nothing', null],
  ])('answers 500, and logs it, for %s', async (_label, body) => {
    const res = await serve(body).inject({ method: 'GET', url: '/answer' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ detail: [{ loc: [], msg: 'internal server error', type: 'internal' }] });
    expect(res.body).not.toContain('seven');
    expect(lines).toContainEqual(expect.objectContaining({ level: 'error', msg: 'request failed' }));
  });

  it('leaves out a field the shape does not declare (a sealed secret a handler forgot to drop)', async () => {
    const res = await serve({ ...row, input_secrets: 'sealed:secret-blob' }).inject({ method: 'GET', url: '/answer' });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('sealed');
    expect(res.json()).toEqual(row);
  });
});

describe('requests', () => {
  it('hands the handler the parsed values, and answers 422 naming each fault with its JSON Schema keyword', async () => {
    app = createApp(logger).app;
    const seen: unknown[] = [];
    app.post(
      '/things/:thingId',
      { schema: { params: pathParams('thingId'), querystring: z.object({ limit: z.coerce.number().int().min(1).default(50) }), body: z.strictObject({ at: z.iso.datetime(), count: z.number().int().min(0) }) } },
      async (request) => {
        seen.push({ id: request.params.thingId, limit: request.query.limit, count: request.body.count });
        return { ok: true };
      },
    );
    const ok = await app.inject({ method: 'POST', url: '/things/t1?limit=7', payload: { at: '2025-05-01T10:00:00.000Z', count: 2 } });
    expect(ok.statusCode).toBe(200);
    expect(seen).toEqual([{ id: 't1', limit: 7, count: 2 }]);

    const bad = await app.inject({ method: 'POST', url: '/things/t1?limit=0', payload: { at: '2025-05-01T10:00:00.000Z', count: 2 } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toEqual({ detail: [{ loc: ['query', 'limit'], msg: 'must be >= 1', type: 'minimum' }] });
    const body = await app.inject({ method: 'POST', url: '/things/t1', payload: { at: 'yesterday', count: -1, extra: 1 } });
    expect(body.json()).toEqual({
      detail: [
        { loc: ['body', 'at'], msg: 'must match format "date-time"', type: 'format' },
        { loc: ['body', 'count'], msg: 'must be >= 0', type: 'minimum' },
        { loc: ['body', 'extra'], msg: 'must NOT have additional properties', type: 'additionalProperties' },
      ],
    });
    const missing = await app.inject({ method: 'POST', url: '/things/t1', payload: { count: 1.5 } });
    expect(missing.json()).toEqual({
      detail: [
        { loc: ['body', 'at'], msg: 'field required', type: 'missing' },
        { loc: ['body', 'count'], msg: 'must be integer', type: 'type' },
      ],
    });
    expect(seen).toHaveLength(1);
  });
});
