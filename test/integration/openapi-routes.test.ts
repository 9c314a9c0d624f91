import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { specification } from '../../src/contract/specification.js';
import { toJsonSchema } from '../../src/contract/to-json-schema.js';
import { parseSpecification } from '../../src/domain/specification.js';
import { startHarness, type Harness } from '../contract/local-api-harness.js';

/**
 * The OpenAPI document is generated from the routes the server really serves (@fastify/swagger):
 * its paths and methods are compared with the server's own route table, not with a list here.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

/** `/api/workflows/:id` as OpenAPI writes it: `/api/workflows/{id}`. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('the OpenAPI document', () => {
  it('lists exactly the routes the server serves, each with its methods', async () => {
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    const documented = Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`));
    const served = h.server.routes.filter((r) => !r.hidden).map((r) => `${r.method} ${openApiPath(r.url)}`);
    expect(served.length).toBeGreaterThan(20);
    expect([...documented].sort()).toEqual([...new Set(served)].sort());
  });

  it('leaves out only the files, the health check, the document itself, the login link and the MCP endpoint', () => {
    const hidden = new Set(h.server.routes.filter((r) => r.hidden).map((r) => r.url));
    expect([...hidden].sort()).toEqual(['/', '/artifacts/*', '/dashboard/:file', '/healthz', '/login', '/mcp', '/openapi.json']);
  });

  it('documents each request body with the schema the server validates it with', async () => {
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    const create = doc.paths['/api/workflows']?.post?.requestBody?.content['application/json']?.schema;
    expect(create).toEqual({ $ref: '#/components/schemas/WorkflowCreate' });
    expect(doc.components.schemas.WorkflowCreate?.required).toEqual(['prompt', 'allowedDomains']);
    // The server refuses what the documented schema refuses, with the seed's error shape.
    const refused = await h.api.as(errorBody)('POST', '/api/workflows', { allowedDomains: ['a.test'] });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ detail: [{ loc: ['body', 'prompt'], msg: 'field required', type: 'missing' }] });
  });

  it('publishes the specification as its zod schema generates it, and the API and the worker agree', async () => {
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    const generated = toJsonSchema(specification) as { properties: unknown; required: unknown };
    expect(doc.components.schemas.Specification?.properties).toEqual(generated.properties);
    expect(doc.components.schemas.Specification?.required).toEqual(generated.required);
    const spec = { prompt: 'p', allowedDomains: ['shop.test:8443'], profile: 'tenant-a.crm', payloadSchema: true };
    expect((await h.api('POST', '/api/workflows', spec)).status).toBe(201);
    expect(parseSpecification(spec)).toEqual(spec);
    // What one refuses, the other refuses too.
    for (const bad of [{ allowedDomains: ['*.com'] }, { profile: '..' }, { maxSteps: 0 }, { payloadSchema: 3 }]) {
      expect((await h.api('POST', '/api/workflows', { ...spec, ...bad })).status).toBe(422);
      expect(() => parseSpecification({ ...spec, ...bad })).toThrow(/invalid specification/);
    }
  });
});

/**
 * The routes docs/operations.md lists in its table of the local API, as `METHOD /path/{param}`.
 * A cell may list several (`POST /a/{id}/started`, `…/completed`): `…/x` replaces the last
 * segment of the one before it; `/artifacts/…` is the folder's wildcard; a query is dropped.
 */
function documentedRoutes(): string[] {
  const text = readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const section = text.slice(text.indexOf('## The local API and dashboard'));
  const table = section.slice(section.indexOf('| route | does |'), section.indexOf('\n\n', section.indexOf('| route | does |')));
  const routes: string[] = [];
  for (const row of table.split('\n').slice(2)) {
    let method = '';
    let previous = '';
    for (const m of (row.split('|')[1] ?? '').matchAll(/`(?:([A-Z]+) )?([^`]+)`/g)) {
      method = m[1] ?? method;
      let p = m[2]!.split('?')[0]!;
      if (p.startsWith('…/')) p = previous.replace(/\/[^/]+$/, p.slice(1));
      previous = p;
      routes.push(`${method} ${p.replace(/\/…$/, '/*')}`);
    }
  }
  return routes;
}

describe('docs/operations.md', () => {
  it('lists every route the local API serves, and no other', () => {
    const documented = documentedRoutes();
    expect(documented).toContain('POST /api/executions/{id}/failed');
    const served = h.server.routes.filter((r) => r.method !== 'HEAD').map((r) => `${r.method} ${openApiPath(r.url)}`);
    // The docs name each route's parameters for readers (`{versionId}`); compare the shapes only.
    const shape = (route: string) => route.replace(/\{[^}]+\}/g, '{}');
    expect([...new Set(documented.map(shape))].sort()).toEqual([...new Set(served.map(shape))].sort());
  });
});
