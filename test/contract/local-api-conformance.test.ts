import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution, executionList } from '../../src/contract/executions.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { webhookCreated } from '../../src/contract/webhooks.js';
import { versionList, workflow, workflowList, workflowVersion } from '../../src/contract/workflows.js';
import { tempDir } from '../support/env.js';
import { API_KEY, expectDetailShape, startHarness, type Harness } from './local-api-harness.js';

/**
 * The service description kept to the letter where the local API strayed from it
 * (docs/api.md): which version an execute call runs, what deleting a workflow removes, the
 * reports' closed bodies, the trailing slash, and the `loc` of every 404.
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ artifactsDir: await tempDir('conformance-artifacts'), network: true });
});

afterAll(async () => {
  await h?.close();
});

const base = { allowedDomains: ['shop.test'] };

async function createWorkflow(body: Record<string, unknown> = {}): Promise<{ id: string; v1: string }> {
  const res = await h.api.as(workflow)('POST', '/api/workflows', { prompt: 'version one', ...base, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.workflow_uuid, v1: res.body.current_version!.workflow_version_uuid };
}

async function jobOf(executionId: string): Promise<{ workflowVersionId: string; specification: { prompt: string } }> {
  const job = await h.queue.getJob(executionId);
  expect(job, `no job for ${executionId}`).toBeDefined();
  return job!.data as { workflowVersionId: string; specification: { prompt: string } };
}

describe('which version an execute call runs', () => {
  it('runs the newest published version by default while a newer draft waits, and the draft when named', async () => {
    const { id, v1 } = await createWorkflow();
    const draft = await h.api.as(workflow)('PATCH', `/api/workflows/${id}`, { prompt: 'version two', status: 'draft' });
    expect(draft.status).toBe(200);
    const v2 = draft.body.current_version!.workflow_version_uuid;

    // Saving a draft takes nothing offline: v1 still runs by default.
    const byDefault = await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, {});
    expect(byDefault.status, JSON.stringify(byDefault.body)).toBe(201);
    expect(byDefault.body).toMatchObject({ version: 1, workflow_version_uuid: v1 });
    expect((await jobOf(byDefault.body.execution_uuid)).specification.prompt).toBe('version one');

    // The list says each version's state as it is: only v1 runs by default.
    const list = (await h.api.as(versionList)('GET', `/api/workflows/${id}/versions`)).body.items;
    expect(list.map((v) => [v.version, v.status, v.is_current, v.runs_by_default])).toEqual([
      [1, 'published', false, true],
      [2, 'draft', true, false],
    ]);

    // A draft runs when named, to try it before publishing it; snake_case is read too.
    for (const body of [{ workflowVersionId: v2 }, { workflow_version_id: v2 }]) {
      const tried = await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, body);
      expect(tried.status, JSON.stringify(tried.body)).toBe(201);
      expect(tried.body).toMatchObject({ version: 2, workflow_version_uuid: v2 });
      const job = await jobOf(tried.body.execution_uuid);
      expect(job).toMatchObject({ workflowVersionId: v2, specification: { prompt: 'version two' } });
    }
    // An older published version runs when named too.
    expect((await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, { workflowVersionId: v1 })).body).toMatchObject({ version: 1 });

    // Published, v2 becomes the default.
    await h.api.as(workflowVersion)('POST', `/api/workflows/${id}/versions/${v2}/publish`);
    expect((await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, {})).body).toMatchObject({ version: 2 });
    const after = (await h.api.as(versionList)('GET', `/api/workflows/${id}/versions`)).body.items;
    expect(after.map((v) => v.runs_by_default)).toEqual([false, true]);
    expect((await h.api('DELETE', `/api/workflows/${id}`)).status).toBe(204);
  });

  it('answers 404 at body.workflowVersionId for a version of another workflow or none', async () => {
    const one = await createWorkflow();
    const other = await createWorkflow();
    for (const versionId of [other.v1, 'no-such-version']) {
      const res = await h.api.as(errorBody)('POST', `/api/workflows/${one.id}/execute`, { workflowVersionId: versionId });
      expect(res.status).toBe(404);
      expectDetailShape(res.body);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'workflowVersionId'], type: 'not_found' });
    }
    expect((await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${one.id}`)).body.total).toBe(0);
  });

  it('answers 422 version_draft when no version is published and none is named, and says what to do', async () => {
    const { id, v1 } = await createWorkflow({ status: 'draft' });
    const res = await h.api.as(errorBody)('POST', `/api/workflows/${id}/execute`, {});
    expect(res.status).toBe(422);
    expect(res.body.detail![0]).toMatchObject({ loc: ['path', 'workflowId'], type: 'version_draft' });
    expect(res.body.detail![0]!.msg).toMatch(/version 1 is a draft.*publish.*workflowVersionId/);
    expect((await h.api.as(versionList)('GET', `/api/workflows/${id}/versions`)).body.items[0]).toMatchObject({ status: 'draft', runs_by_default: false });
    expect((await h.api('POST', `/api/workflows/${id}/execute`, { workflowVersionId: v1 })).status).toBe(201);
  });
});

describe('DELETE /api/workflows/{id}', () => {
  it('removes its executions\' artifacts: nothing of the workflow is served afterwards', async () => {
    const { id } = await createWorkflow();
    const kept = await createWorkflow();
    const names = ['video.mp4', 'logs.jsonl', 'output.json', 'steps/001.jpg', 'downloads/receipt.pdf', 'recording.json'];
    const executionIds: string[] = [];
    for (const workflowId of [id, id, kept.id]) {
      const executionId = (await h.api.as(execution)('POST', `/api/workflows/${workflowId}/execute`, {})).body.execution_uuid;
      executionIds.push(executionId);
      for (const name of names) {
        const file = path.join(h.artifactsDir!, 'executions', executionId, ...name.split('/'));
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `${name} of ${executionId}`);
      }
    }
    const served = async (executionId: string, name: string) => (await fetch(`${h.server.url}/artifacts/executions/${executionId}/${name}`, { headers: { 'X-Service-Key': API_KEY } })).status;
    for (const name of names) expect(await served(executionIds[0]!, name), name).toBe(200);

    expect((await h.api('DELETE', `/api/workflows/${id}`)).status).toBe(204);
    for (const executionId of executionIds.slice(0, 2)) {
      for (const name of names) expect(await served(executionId, name), `${executionId}/${name}`).toBe(404);
    }
    expect(await readdir(path.join(h.artifactsDir!, 'executions'))).toEqual([executionIds[2]]);
    // Another workflow's artifacts stay.
    for (const name of names) expect(await served(executionIds[2]!, name), name).toBe(200);
    await h.api('DELETE', `/api/workflows/${kept.id}`);
  });
});

describe('reports take exactly their fields', () => {
  const at = '2025-05-01T10:00:00.000Z';
  const counts = { durationMs: 1, nSteps: 1, nAgentActions: 1, nScreenshots: 0 };

  async function queued(): Promise<string> {
    const { id } = await createWorkflow();
    return (await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, {})).body.execution_uuid;
  }

  it('/failed with an error code the contract does not know answers 422 and changes nothing', async () => {
    const executionId = await queued();
    for (const code of ['made_up', 'TIMEOUT', '']) {
      const res = await h.api.as(errorBody)('POST', `/api/executions/${executionId}/failed`, { failedAt: at, error: { code, message: 'm' }, ...counts });
      expect(res.status, code).toBe(422);
      expectDetailShape(res.body);
      expect(res.body.detail[0]!.loc).toEqual(['body', 'error', 'code']);
    }
    const extra = await h.api.as(errorBody)('POST', `/api/executions/${executionId}/failed`, { failedAt: at, error: { code: 'timeout', message: 'm', hint: 'x' } });
    expect(extra.status).toBe(422);
    expect(extra.body.detail![0]!.loc).toEqual(['body', 'error', 'hint']);
    expect((await h.api.as(execution)('GET', `/api/executions/${executionId}`)).body.status).toBe('queued');
    expect((await h.api('POST', `/api/executions/${executionId}/failed`, { failedAt: at, error: { code: 'timeout', message: 'm' } })).status).toBe(200);
  });

  it('every report refuses a field it does not know, naming it', async () => {
    const bodies: Record<string, Record<string, unknown>> = {
      started: { startedAt: at },
      waiting: { waitingAt: at, kind: 'question', question: 'q?' },
      resumed: { resumedAt: at },
      completed: { completedAt: at, ...counts },
      failed: { failedAt: at, error: { code: 'timeout', message: 'm' } },
    };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(bodies)), fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !/^(startedAt|waitingAt|kind|question|choices|timeoutAt|resumedAt|answeredBy|completedAt|failedAt|error|durationMs|nSteps|nAgentActions|nScreenshots|outputUrl|videoUrl|logsUrl|__proto__)$/.test(k)), async (report, field) => {
        const executionId = await queued();
        const res = await h.api.as(errorBody)('POST', `/api/executions/${executionId}/${report}`, { ...bodies[report], [field]: 1 });
        expect(res.status).toBe(422);
        expect(res.body.detail).toContainEqual(expect.objectContaining({ loc: ['body', field] }));
        expect((await h.api.as(execution)('GET', `/api/executions/${executionId}`)).body.status).toBe('queued');
      }),
      { numRuns: 15 },
    );
    // The misspelling the issue met.
    const executionId = await queued();
    const res = await h.api.as(errorBody)('POST', `/api/executions/${executionId}/started`, { startedAt: at, startAt: at });
    expect(res.status).toBe(422);
    expect(res.body.detail![0]).toMatchObject({ loc: ['body', 'startAt'], type: 'additionalProperties' });
  });
});

describe('paths', () => {
  it('GET /api/executions/ (a trailing slash) is the list, as GET /api/executions', async () => {
    const { id } = await createWorkflow();
    await h.api('POST', `/api/workflows/${id}/execute`, {});
    const plain = await h.api.as(executionList)('GET', '/api/executions?limit=5');
    const slash = await h.api.as(executionList)('GET', '/api/executions/?limit=5');
    expect(slash.status).toBe(200);
    expect(slash.body).toEqual(plain.body);
    expect((await h.api.as(workflowList)('GET', '/api/workflows/')).body).toEqual((await h.api.as(workflowList)('GET', '/api/workflows')).body);
  });

  it('the loc of every 404 names the path parameter as its route spells it', async () => {
    const at = '2025-05-01T10:00:00.000Z';
    // A valid body per route, so that the 404 is about the path (validation comes first).
    const bodies: Record<string, unknown> = {
      'PATCH /api/workflows/{id}': { prompt: 'p' },
      'POST /api/workflows/{workflowId}/execute': {},
      'POST /api/executions/{execution_uuid}/started': { startedAt: at },
      'POST /api/executions/{execution_uuid}/completed': { completedAt: at, durationMs: 1, nSteps: 1, nAgentActions: 1, nScreenshots: 0 },
      'POST /api/executions/{execution_uuid}/failed': { failedAt: at, error: { code: 'timeout', message: 'm' } },
      'POST /api/executions/{execution_uuid}/waiting': { waitingAt: at, kind: 'question', question: 'q?' },
      'POST /api/executions/{execution_uuid}/resumed': { resumedAt: at },
      'POST /api/executions/{execution_uuid}/answer': { answer: 'yes' },
      'POST /api/executions/{execution_uuid}/input': { kind: 'text', text: 'x' },
    };
    const { id: knownWorkflow } = await createWorkflow();
    // A parameter before the unknown one is known: a webhook's id where the route names one.
    const webhook = await h.api.as(webhookCreated)('POST', '/api/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['execution.completed'] });
    expect(webhook.status).toBe(201);
    const known = (name: string): string => (name === 'webhookId' ? webhook.body.id : knownWorkflow);
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    const routes = Object.entries(doc.paths).flatMap(([template, ops]) => (template.includes('{') ? Object.keys(ops).map((method) => ({ method: method.toUpperCase(), template })) : []));
    expect(routes.length).toBeGreaterThan(10);
    for (const { method, template } of routes) {
      const params = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
      // Each parameter unknown in turn, those before it known (a known workflow where one is asked for).
      for (let unknown = 0; unknown < params.length; unknown++) {
        const url = params.reduce((out, name, i) => out.replace(`{${name}}`, i < unknown ? known(name) : `unknown-${name}`), template);
        const key = `${method} ${template}`;
        const res = await h.api.as(errorBody)(method, url, method === 'GET' || method === 'DELETE' ? undefined : (bodies[key] ?? {}));
        expect(res.status, `${key} → ${JSON.stringify(res.body)}`).toBe(404);
        expectDetailShape(res.body);
        expect(res.body.detail[0]!.loc, key).toEqual(['path', params[unknown]]);
        expect(res.body.detail[0]!.type).toBe('not_found');
      }
    }
  });
});
