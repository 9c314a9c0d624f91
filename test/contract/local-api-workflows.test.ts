import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution, executionList } from '../../src/contract/executions.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { runCacheView } from '../../src/contract/run-cache-view.js';
import { cacheCleared, versionList, workflow, workflowList } from '../../src/contract/workflows.js';
import { runCacheKey } from '../../src/domain/run-cache.js';
import { API_KEY, ISO, expectDetailShape, startHarness, type Harness } from './local-api-harness.js';

/** The seed's workflow endpoints, against the local API on a real Redis. */

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const spec = {
  name: 'Order lookup',
  description: 'Finds an order',
  prompt: 'Open the shop and find the order',
  allowedDomains: ['shop.test'],
  payloadSchema: { type: 'object', required: ['order'], properties: { order: { type: 'string', minLength: 3 } } },
};

function expectVersion(v: Record<string, unknown>): void {
  expect(typeof v.workflow_version_uuid).toBe('string');
  expect(typeof v.workflow_uuid).toBe('string');
  expect(v).toHaveProperty('specification');
  expect(v.created_at).toMatch(ISO);
  expect(v.updated_at).toMatch(ISO);
  expect(Number.isInteger(v.version)).toBe(true);
  expect(typeof v.is_current).toBe('boolean');
  expect(typeof v.name).toBe('string');
  expect(typeof v.description).toBe('string');
}

describe('authentication', () => {
  const endpoints: [string, string][] = [
    ['GET', '/api/workflows'],
    ['POST', '/api/workflows'],
    ['PATCH', '/api/workflows/x'],
    ['DELETE', '/api/workflows/x'],
    ['GET', '/api/workflows/x/versions'],
    ['POST', '/api/workflows/x/execute'],
    ['GET', '/api/executions'],
    ['GET', '/api/executions/x'],
    ['POST', '/api/executions/x/started'],
    ['POST', '/api/executions/x/completed'],
    ['POST', '/api/executions/x/failed'],
  ];

  it.each(endpoints)('%s %s answers 401 with the documented body without a valid key', async (method, path) => {
    for (const headers of [{}, { 'X-Service-Key': 'wrong' }, { 'X-Service-Key': `${API_KEY}x` }] as Record<string, string>[]) {
      const res = await h.api.as(errorBody)(method, path, method === 'GET' || method === 'DELETE' ? undefined : {}, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ detail: [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }] });
    }
  });

  it('accepts any configured key', async () => {
    expect((await h.api('GET', '/api/workflows', undefined, { 'X-Service-Key': 'other-key' })).status).toBe(200);
  });

  it('serves an OpenAPI document of every endpoint to a key holder', async () => {
    expect((await h.api('GET', '/openapi.json', undefined, {})).status).toBe(401);
    const res = await h.api.as(openApiDocument)('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/api/workflows',
        '/api/workflows/{id}',
        '/api/workflows/{workflow_uuid}/versions',
        '/api/workflows/{workflowId}/execute',
        '/api/executions',
        '/api/executions/{executionId}',
        '/api/executions/{execution_uuid}/started',
        '/api/executions/{execution_uuid}/completed',
        '/api/executions/{execution_uuid}/failed',
      ]),
    );
    expect(res.body.components.securitySchemes.ServiceKey).toEqual({ type: 'apiKey', in: 'header', name: 'X-Service-Key' });
    expect(res.body.paths['/api/executions']!.get!.parameters!.map((p) => p.name)).toEqual(['limit', 'offset', 'workflow_uuid', 'status']);
  });
});

describe('POST /api/workflows', () => {
  it('creates the workflow and publishes version 1 at once', async () => {
    const res = await h.api.as(workflow)('POST', '/api/workflows', spec);
    expect(res.status).toBe(201);
    const w = res.body;
    expect(typeof w.workflow_uuid).toBe('string');
    expect(w).toMatchObject({ name: 'Order lookup', description: 'Finds an order', slug: 'order-lookup' });
    expect(w.created_at).toMatch(ISO);
    expectVersion(w.current_version!);
    expect(w.current_version).toMatchObject({ version: 1, is_current: true, workflow_uuid: w.workflow_uuid, status: 'published' });
    expect(w.current_version!.specification).toEqual({ prompt: spec.prompt, allowedDomains: spec.allowedDomains, payloadSchema: spec.payloadSchema });

    const versions = await h.api.as(versionList)('GET', `/api/workflows/${w.workflow_uuid}/versions`);
    expect(versions.status).toBe(200);
    expect(versions.body.total).toBe(1);
    expect(versions.body.items).toHaveLength(1);
    expectVersion(versions.body.items[0]!);
    expect(versions.body.items[0]).toEqual(w.current_version);
  });

  it('accepts the snake_case spellings of the specification and keeps every §3 field', async () => {
    const res = await h.api.as(workflow)('POST', '/api/workflows', {
      name: 'Order lookup',
      prompt: 'p',
      allowed_domains: ['*.shop.test'],
      start_url: 'https://www.shop.test/',
      output_schema: { type: 'object' },
      steps: ['one', 'two'],
      max_steps: 12,
      timeout_ms: 60_000,
      model: 'claude-x',
    });
    expect(res.status).toBe(201);
    expect(res.body.slug).not.toBe('order-lookup');
    expect(res.body.description).toBe('');
    expect(res.body.current_version!.specification).toEqual({
      prompt: 'p',
      allowedDomains: ['*.shop.test'],
      startUrl: 'https://www.shop.test/',
      outputSchema: { type: 'object' },
      steps: ['one', 'two'],
      maxSteps: 12,
      timeoutMs: 60_000,
      model: 'claude-x',
    });
  });

  it('answers 422 with detail[] naming every fault', async () => {
    const res = await h.api.as(errorBody)('POST', '/api/workflows', { name: 'x', allowedDomains: [], maxSteps: 0 });
    expect(res.status).toBe(422);
    expectDetailShape(res.body);
    const locs = res.body.detail.map((d) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.prompt', 'body.allowedDomains', 'body.maxSteps']));
    expect(res.body.detail.find((d) => d.loc.join('.') === 'body.prompt')?.type).toBe('missing');
  });

  it.each([
    ['malformed JSON', '{"prompt":'],
    ['a JSON array', []],
    ['no body', undefined],
    ['a payload schema that is not a schema', { prompt: 'p', allowedDomains: ['a.test'], payloadSchema: { type: 'nope' } }],
    ['a domain with a path', { prompt: 'p', allowedDomains: ['a.test/x'] }],
  ])('answers 422 to %s', async (_label, body) => {
    const res = await h.api.as(errorBody)('POST', '/api/workflows', body);
    expect(res.status).toBe(422);
    expectDetailShape(res.body);
  });
});

describe('PATCH /api/workflows/{id} and versions', () => {
  it('creates a new current version carrying the edit and keeps the previous ones', async () => {
    const created = (await h.api.as(workflow)('POST', '/api/workflows', spec)).body;
    const id = created.workflow_uuid;

    const patched = await h.api.as(workflow)('PATCH', `/api/workflows/${id}`, { prompt: 'Find the order, then its invoice', payload_schema: null, maxSteps: 20 });
    expect(patched.status).toBe(200);
    expect(patched.body.current_version).toMatchObject({ version: 2, is_current: true });
    expect(patched.body.current_version!.specification).toEqual({ prompt: 'Find the order, then its invoice', allowedDomains: ['shop.test'], maxSteps: 20 });

    const renamed = await h.api.as(workflow)('PATCH', `/api/workflows/${id}`, { name: 'Invoices', description: 'Finds invoices' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Invoices', description: 'Finds invoices', slug: created.slug });
    expect(renamed.body.current_version!.version).toBe(3);

    const versions = await h.api.as(versionList)('GET', `/api/workflows/${id}/versions`);
    expect(versions.body.total).toBe(3);
    const items = versions.body.items;
    items.forEach(expectVersion);
    expect(items.map((v) => [v.version, v.is_current])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect(items[0]?.specification).toEqual(created.current_version!.specification);
    expect(items[0]?.workflow_version_uuid).toBe(created.current_version!.workflow_version_uuid);
    expect(new Set(items.map((v) => v.workflow_version_uuid)).size).toBe(3);
    expect(items.every((v) => v.name === 'Invoices')).toBe(true);
  });

  it('answers 422 to an empty or invalid edit and 404 to an unknown workflow', async () => {
    const id = (await h.api.as(workflow)('POST', '/api/workflows', spec)).body.workflow_uuid;
    for (const body of [{}, { prompt: '' }, { allowedDomains: null }, { maxSteps: 'ten' }, { unknownField: 1 }]) {
      const res = await h.api.as(errorBody)('PATCH', `/api/workflows/${id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expectDetailShape(res.body);
    }
    expect((await h.api.as(versionList)('GET', `/api/workflows/${id}/versions`)).body.total).toBe(1);
    const missing = await h.api.as(errorBody)('PATCH', '/api/workflows/no-such-id', { prompt: 'x' });
    expect(missing.status).toBe(404);
    expectDetailShape(missing.body);
    expect((await h.api('GET', '/api/workflows/no-such-id/versions')).status).toBe(404);
  });

  it('lists workflows newest first with total', async () => {
    const a = (await h.api.as(workflow)('POST', '/api/workflows', { ...spec, name: 'first' })).body.workflow_uuid;
    const b = (await h.api.as(workflow)('POST', '/api/workflows', { ...spec, name: 'second' })).body.workflow_uuid;
    const list = await h.api.as(workflowList)('GET', '/api/workflows?limit=2');
    expect(list.status).toBe(200);
    expect(list.body.items.map((w) => w.workflow_uuid)).toEqual([b, a]);
    expect(list.body.total).toBeGreaterThanOrEqual(2);
    expect((await h.api.as(workflow)('GET', `/api/workflows/${a}`)).body.name).toBe('first');
  });
});

describe('DELETE /api/workflows/{id}', () => {
  it('deletes the workflow with all its versions and executions, and dequeues its waiting jobs', async () => {
    const id = (await h.api.as(workflow)('POST', '/api/workflows', { ...spec, payloadSchema: undefined })).body.workflow_uuid;
    await h.api('PATCH', `/api/workflows/${id}`, { prompt: 'v2' });
    const e1 = (await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, { inputPayload: 1 })).body.execution_uuid;
    const e2 = (await h.api.as(execution)('POST', `/api/workflows/${id}/execute`)).body.execution_uuid;
    await h.api('POST', `/api/executions/${e2}/started`, { startedAt: new Date().toISOString() });
    expect(await h.queue.getJob(e1)).toBeDefined();
    const other = (await h.api.as(workflow)('POST', '/api/workflows', spec)).body.workflow_uuid;

    const res = await h.api('DELETE', `/api/workflows/${id}`);
    expect(res.status).toBe(204);
    expect((await h.api('GET', `/api/workflows/${id}`)).status).toBe(404);
    expect((await h.api('GET', `/api/workflows/${id}/versions`)).status).toBe(404);
    expect((await h.api('GET', `/api/executions/${e1}`)).status).toBe(404);
    expect((await h.api('GET', `/api/executions/${e2}`)).status).toBe(404);
    expect((await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${id}`)).body).toEqual({ items: [], total: 0 });
    const all = (await h.api.as(executionList)('GET', '/api/executions?limit=200')).body.items;
    expect(all.map((e) => e.execution_uuid)).not.toContain(e1);
    expect(await h.queue.getJob(e1)).toBeUndefined();
    expect((await h.api('GET', `/api/workflows/${other}`)).status).toBe(200);
    expect((await h.api('DELETE', `/api/workflows/${id}`)).status).toBe(404);
    // Its slug is free again.
    expect((await h.api.as(workflow)('POST', '/api/workflows', { ...spec, name: 'Deleted then reused' })).body.slug).toBe('deleted-then-reused');
  });
});

describe('DELETE /api/workflows/{id}/versions/{versionId}/cache', () => {
  it("forgets the version's run cache, says whether there was one, and knows only the workflow's versions", async () => {
    const created = (await h.api.as(workflow)('POST', '/api/workflows', spec)).body;
    const versionId = created.current_version!.workflow_version_uuid;
    const key = runCacheKey('bull', h.queueName, versionId);
    const redis = new Redis(h.redis.url);
    try {
      await redis.set(key, JSON.stringify({ format: 'execution-worker/run-cache@1' }));
      const cleared = await h.api.as(cacheCleared)('DELETE', `/api/workflows/${created.workflow_uuid}/versions/${versionId}/cache`);
      expect(cleared).toMatchObject({ status: 200, body: { cleared: true } });
      expect(await redis.exists(key)).toBe(0);
      expect((await h.api.as(cacheCleared)('DELETE', `/api/workflows/${created.workflow_uuid}/versions/${versionId}/cache`)).body).toEqual({ cleared: false });
      expect((await h.api('DELETE', `/api/workflows/${created.workflow_uuid}/versions/nope/cache`)).status).toBe(404);
      expect((await h.api('DELETE', `/api/workflows/nope/versions/${versionId}/cache`)).status).toBe(404);
      // Deleting the workflow takes its versions' caches with it.
      await redis.set(key, '{}');
      expect((await h.api('DELETE', `/api/workflows/${created.workflow_uuid}`)).status).toBe(204);
      expect(await redis.exists(key)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe('GET /api/workflows/{id}/versions/{versionId}/cache', () => {
  it('reads the cached path: each action, its element, its bindings, its effect, what the last repair changed; 404 without a cache', async () => {
    const created = (await h.api.as(workflow)('POST', '/api/workflows', { ...spec, name: 'Cached invoices' })).body;
    const versionId = created.current_version!.workflow_version_uuid;
    const url = `/api/workflows/${created.workflow_uuid}/versions/${versionId}/cache`;
    const redis = new Redis(h.redis.url);
    try {
      expect((await h.api('GET', url)).status).toBe(404);
      const link = { role: 'link', name: 'Invoice #5 from Cobalt Software Ltd', tag: 'a', href: '/admin/invoices/invoice/5/change/' };
      const entry = {
        format: 'execution-worker/run-cache@4', versionId, fingerprint: 'f', toolType: 'browser_toolset_20260801', createdAt: '2026-12-01T00:00:00.000Z', sourceExecutionId: 'exec-1', input: [],
        steps: [
          [
            { tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref' }, value: 'clerk' }, page: 'http://a.test/admin/login', target: { role: 'textbox', name: 'Username', tag: 'input' }, sources: [{ at: 'value', source: { kind: 'constant', text: 'clerk' } }] },
            { tool: 'type', toolsetName: 'browser', input: {}, page: 'http://a.test/admin/x', focus: { role: 'combobox', name: 'Watcher', tag: 'input' }, sources: [{ at: 'text', source: { kind: 'derived', path: ['watcher'], derivation: { how: 'word', index: 0 } } }], byRepair: true },
          ],
          [
            { tool: 'left_click', toolsetName: 'browser', input: { target: { type: 'ref' } }, page: 'http://a.test/admin/invoices/invoice', target: link, sources: [{ at: 'target', source: { kind: 'pattern', parts: [{ text: 'Invoice #' }, { path: ['number'] }, { text: ' from ' }, { path: ['vendor'] }] } }] },
            { tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref' }, value: 'Net 30' }, page: 'http://a.test/admin/x', target: { role: 'textbox', name: 'Notes', tag: 'textarea' }, guard: { paths: [['notes']], digest: 'd', why: 'literal' } },
          ],
        ],
        repairs: [{ cachedStep: 1, reason: 'no combobox "Watchers" on the page', before: ['type into combobox "Watchers"'], after: ['type ref_4 "Yaw"'] }],
      };
      await redis.set(runCacheKey('bull', h.queueName, versionId), JSON.stringify(entry));
      const read = await h.api.as(runCacheView)('GET', url);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ version_id: versionId, source_execution_id: 'exec-1', not_asked: [], last_repair: [{ cached_step: 1, reason: 'no combobox "Watchers" on the page', before: ['type into combobox "Watchers"'], after: ['type ref_4 "Yaw"'] }] });
      const actions = read.body.steps.flatMap((s) => s.actions);
      expect(actions.map((a) => a.bindings)).toEqual([
        [{ kind: 'constant', at: 'value', text: 'clerk' }],
        [{ kind: 'derived', at: 'text', path: 'watcher', derivation: { how: 'word', index: 0 } }],
        [{ kind: 'pattern', at: 'target', pattern: 'Invoice #{{number}} from {{vendor}}' }],
        [{ kind: 'guarded', at: 'value', why: 'literal', paths: ['notes'], from: ['notes'] }],
      ]);
      expect(actions.map((a) => [a.action, a.by_repair, a.element?.name ?? null])).toEqual([
        ['form_input', false, 'Username'],
        ['type', true, null],
        ['left_click', false, link.name],
        ['form_input', false, 'Notes'],
      ]);
      expect((await h.api('GET', `/api/workflows/${created.workflow_uuid}/versions/nope/cache`)).status).toBe(404);
      // An entry of an earlier format is no cache to read.
      await redis.set(runCacheKey('bull', h.queueName, versionId), JSON.stringify({ format: 'execution-worker/run-cache@1' }));
      expect((await h.api('GET', url)).status).toBe(404);
    } finally {
      redis.disconnect();
    }
  });
});
