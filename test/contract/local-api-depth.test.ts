import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { executionList } from '../../src/contract/executions.js';
import { versionList, workflow, workflowList } from '../../src/contract/workflows.js';
import { createStore } from '../../src/local-service/store.js';
import { expectDetailShape, startHarness, type Harness } from './local-api-harness.js';
import { MAX_DEPTH } from '../../src/contract/json-bounds.js';

/**
 * Values nested past the depth bound (docs/secrets.md#bounds) in every field of the local API
 * that takes free-form JSON, at depths just past the bound and far past what structured clone
 * and JSON.stringify can walk (a few thousand levels): each answers 422 naming the field and the
 * bound, the process keeps answering, and nothing is left behind (no workflow, no version, no
 * slug). Bodies are written as text (the API client sends a string as it is): the client's own
 * JSON.stringify could not write them.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** JSON text `levels` containers deep, arrays or objects, around `leaf`. */
function deepText(levels: number, kind: 'array' | 'object', leaf = '"x"'): string {
  return kind === 'array' ? `${'['.repeat(levels)}${leaf}${']'.repeat(levels)}` : `${'{"k":'.repeat(levels)}${leaf}${'}'.repeat(levels)}`;
}

const DEPTHS = [MAX_DEPTH + 1, MAX_DEPTH * 2, 2_500, 5_000, 10_000];
const KINDS = ['array', 'object'] as const;
/** Each free-form field of a workflow body, and the JSON text putting `inner` in it (with how many levels that adds). */
const FIELDS = [
  { field: 'payloadSchema', around: 2, wrap: (inner: string) => `{"type":"object","properties":{"x":${inner}}}` },
  { field: 'outputSchema', around: 1, wrap: (inner: string) => `{"type":"array","items":${inner}}` },
  { field: 'configuration', around: 1, wrap: (inner: string) => `{"inputPayload":${inner}}` },
] as const;

async function healthy(): Promise<void> {
  expect((await h.api('GET', '/healthz')).status).toBe(200);
}

describe('values nested past the bound', () => {
  it('creating a workflow answers 422 naming the field and the bound for every field, kind and depth, leaves nothing, and the API keeps answering', async () => {
    const cases = FIELDS.flatMap((f) => KINDS.flatMap((kind) => DEPTHS.map((depth) => ({ ...f, kind, depth }))));
    for (const c of cases) {
      const name = `deep-${c.field}-${c.kind}-${c.depth}`;
      const text = `{"name":"${name}","prompt":"p","allowedDomains":["example.com"],"${c.field}":${c.wrap(deepText(c.depth - c.around, c.kind))}}`;
      const res = await h.api.as(errorBody)('POST', '/api/workflows', text);
      expect(res.status, name).toBe(422);
      expectDetailShape(res.body);
      const [fault] = res.body.detail;
      expect(fault!.loc.slice(0, 2)).toEqual(['body', c.field]);
      // The path goes down to where the value passes the bound.
      expect(fault!.loc).toHaveLength(2 + MAX_DEPTH);
      expect(fault!.type).toBe('too_deep');
      expect(fault!.msg).toBe(`it nests deeper than ${MAX_DEPTH} levels of objects and arrays`);
      await healthy();
    }
    const list = await h.api.as(workflowList)('GET', '/api/workflows');
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(0);
    // No slug was kept by a refused workflow: the same name gets the bare slug.
    const again = await h.api.as(workflow)('POST', '/api/workflows', { name: `deep-configuration-object-${MAX_DEPTH + 1}`, prompt: 'p', allowedDomains: ['example.com'] });
    expect(again.status).toBe(201);
    expect(again.body.slug).toBe(`deep-configuration-object-${MAX_DEPTH + 1}`);
    await h.api('DELETE', `/api/workflows/${again.body.workflow_uuid}`);
  });

  it('accepts each field exactly at the bound', async () => {
    for (const f of FIELDS) {
      // A schema whose innermost level is an array of strings: as deep as allowed, and valid.
      const inner = f.field === 'configuration' ? deepText(MAX_DEPTH - f.around, 'array') : `${'{"type":"array","items":'.repeat(MAX_DEPTH - f.around - 1)}{"type":"string"}${'}'.repeat(MAX_DEPTH - f.around - 1)}`;
      const res = await h.api('POST', '/api/workflows', `{"name":"edge-${f.field}","prompt":"p","allowedDomains":["example.com"],"${f.field}":${f.wrap(inner)}}`);
      expect(res.status, f.field).toBe(201);
    }
    const list = await h.api.as(workflowList)('GET', '/api/workflows');
    expect(list.body.total).toBe(FIELDS.length);
    for (const w of list.body.items) {
      expect(w.current_version).not.toBeNull();
      await h.api('DELETE', `/api/workflows/${w.workflow_uuid}`);
    }
  });

  it('editing a workflow and executing one answer 422 too, and the workflow keeps its one version', async () => {
    const created = await h.api.as(workflow)('POST', '/api/workflows', { name: 'Kept', prompt: 'p', allowedDomains: ['example.com'] });
    expect(created.status).toBe(201);
    const id = created.body.workflow_uuid;
    for (const depth of DEPTHS) {
      for (const f of FIELDS) {
        const res = await h.api.as(errorBody)('PATCH', `/api/workflows/${id}`, `{"${f.field}":${f.wrap(deepText(depth - f.around, 'array'))}}`);
        expect(res.status, `${f.field} ${depth}`).toBe(422);
        expect(res.body.detail![0]!.loc.slice(0, 2)).toEqual(['body', f.field]);
        expect(res.body.detail![0]!.type).toBe('too_deep');
      }
      const executed = await h.api.as(errorBody)('POST', `/api/workflows/${id}/execute`, `{"inputPayload":${deepText(depth, 'object')}}`);
      expect(executed.status, `inputPayload ${depth}`).toBe(422);
      expect(executed.body.detail![0]!.loc.slice(0, 2)).toEqual(['body', 'inputPayload']);
      expect(executed.body.detail![0]!.type).toBe('input_too_deep');
      expect(executed.body.detail![0]!.msg).toContain(`deeper than ${MAX_DEPTH} levels`);
      await healthy();
    }
    const versions = await h.api.as(versionList)('GET', `/api/workflows/${id}/versions`);
    expect(versions.status).toBe(200);
    expect(versions.body.total).toBe(1);
    const executions = await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${id}`);
    expect(executions.body.total).toBe(0);
  });
});

describe('the store', () => {
  it('writes a workflow and its first version together: one that cannot be written leaves no row, no version and no slug', async () => {
    const redis = new Redis(h.redis.url);
    try {
      const prefix = '{depth-store}:';
      const store = createStore(redis, prefix);
      const before = await redis.keys(`${prefix}*`);
      // Far deeper than JSON.stringify can write: encoding the version throws.
      let deep: unknown = 'x';
      for (let i = 0; i < 20_000; i++) deep = [deep];
      await expect(store.createWorkflow({ name: 'Half', description: '', specification: { prompt: 'p', allowedDomains: ['example.com'], configuration: deep } })).rejects.toThrow(RangeError);
      expect(await redis.keys(`${prefix}*`)).toEqual(before);
      expect((await store.listWorkflows(10, 0)).total).toBe(0);
      const made = await store.createWorkflow({ name: 'Half', description: '', specification: { prompt: 'p', allowedDomains: ['example.com'] } });
      expect(made.slug).toBe('half');
      expect((await store.currentVersion(made.workflow_uuid))?.version).toBe(1);
    } finally {
      redis.disconnect();
    }
  });
});
