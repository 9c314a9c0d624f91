import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution, executionList, type ExecutionRow } from '../../src/contract/executions.js';
import { versionList, workflow } from '../../src/contract/workflows.js';
import { ISO, expectDetailShape, startHarness, type Harness } from './local-api-harness.js';

/** The seed's execution endpoints and the worker reports of contract §2, on a real Redis. */

let h: Harness;
let workflowId: string;
let versionId: string;

const specification = {
  prompt: 'Look the order up',
  allowedDomains: ['shop.test'],
  payloadSchema: {
    type: 'object',
    required: ['order', 'email'],
    properties: { order: { type: 'string' }, email: { type: 'string', format: 'email' }, password: { type: 'string', writeOnly: true } },
  },
};

beforeAll(async () => {
  h = await startHarness();
  const created = (await h.api.as(workflow)('POST', '/api/workflows', { name: 'Orders', ...specification })).body;
  workflowId = created.workflow_uuid;
  versionId = created.current_version!.workflow_version_uuid;
});

afterAll(async () => {
  await h?.close();
});

const payload = { order: 'A-1', email: 'a@b.test', password: 'hunter22' };

async function execute(inputPayload: unknown = payload, id = workflowId): Promise<ExecutionRow> {
  const res = await h.api.as(execution)('POST', `/api/workflows/${id}/execute`, { inputPayload });
  expect(res.status).toBe(201);
  return res.body;
}

const completedBody = {
  completedAt: '2025-05-01T10:00:42.000Z',
  durationMs: 42_000,
  nSteps: 7,
  nAgentActions: 11,
  nScreenshots: 8,
  outputUrl: 'http://x/output.json',
  videoUrl: 'http://x/video.mp4',
  logsUrl: 'http://x/logs.jsonl',
};

/** Every field of the seed's executions table, with its type. */
function expectExecutionShape(e: Record<string, unknown>): void {
  for (const f of ['execution_uuid', 'workflow_version_uuid', 'workflow_uuid', 'workflow_name', 'status']) expect(typeof e[f], f).toBe('string');
  expect(e.created_at).toMatch(ISO);
  expect(e.updated_at).toMatch(ISO);
  expect(e).toHaveProperty('input_payload');
  expect(e.duration_ms === null || Number.isInteger(e.duration_ms)).toBe(true);
  for (const f of ['n_steps', 'n_agent_actions', 'n_screenshots']) expect(Number.isInteger(e[f]), f).toBe(true);
  for (const f of ['output_url', 'video_url', 'logs_url']) expect(e[f] === null || typeof e[f] === 'string', f).toBe(true);
}

describe('POST /api/workflows/{workflowId}/execute', () => {
  it('creates a queued execution and adds the BullMQ job exactly as contract §1 says', async () => {
    const e = await execute();
    expectExecutionShape(e);
    expect(e).toMatchObject({
      status: 'queued',
      workflow_uuid: workflowId,
      workflow_version_uuid: versionId,
      workflow_name: 'Orders',
      // The writeOnly field is masked in what the API stores and shows; the job has the value.
      input_payload: { ...payload, password: '{{password}}' },
      duration_ms: null,
      n_steps: 0,
      n_agent_actions: 0,
      n_screenshots: 0,
      output_url: null,
      video_url: null,
      logs_url: null,
    });
    const job = await h.queue.getJob(e.execution_uuid);
    expect(job?.id).toBe(e.execution_uuid);
    expect(job?.data).toEqual({ executionId: e.execution_uuid, workflowId, workflowVersionId: versionId, inputPayload: payload, specification });
    expect(job?.opts.attempts).toBe(1);
    expect(await job?.getState()).toBe('waiting');
    expect((await h.api.as(execution)('GET', `/api/executions/${e.execution_uuid}`)).body).toEqual(e);
  });

  it('runs the current version after an edit', async () => {
    const id = (await h.api.as(workflow)('POST', '/api/workflows', { prompt: 'v1', allowedDomains: ['a.test'] })).body.workflow_uuid;
    const v2 = (await h.api.as(workflow)('PATCH', `/api/workflows/${id}`, { prompt: 'v2' })).body.current_version;
    const res = await h.api.as(execution)('POST', `/api/workflows/${id}/execute`);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ workflow_version_uuid: v2?.workflow_version_uuid, input_payload: null });
    expect((await h.queue.getJob(res.body.execution_uuid))?.data.specification).toEqual({ prompt: 'v2', allowedDomains: ['a.test'] });
  });

  it('answers 422 when the payload fails its schema, and creates nothing', async () => {
    const before = (await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${workflowId}`)).body.total;
    const res = await h.api.as(errorBody)('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: { order: 5, email: 'not-an-email' } });
    expect(res.status).toBe(422);
    expectDetailShape(res.body);
    expect(res.body.detail.map((d) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'inputPayload', 'order'],
        ['body', 'inputPayload', 'email'],
      ]),
    );
    const missing = await h.api('POST', `/api/workflows/${workflowId}/execute`, {});
    expect(missing.status).toBe(422);
    expect((await h.api('POST', `/api/workflows/${workflowId}/execute`, '[1]')).status).toBe(422);
    expect((await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${workflowId}`)).body.total).toBe(before);
  });

  it('answers 404 for an unknown workflow', async () => {
    const res = await h.api.as(errorBody)('POST', '/api/workflows/unknown/execute', { inputPayload: null });
    expect(res.status).toBe(404);
    expectDetailShape(res.body);
  });
});

describe('GET /api/executions', () => {
  it('lists newest first with limit, offset and filters by workflow and status', async () => {
    const wf = (await h.api.as(workflow)('POST', '/api/workflows', { prompt: 'list', allowedDomains: ['a.test'] })).body.workflow_uuid;
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) ids.push((await execute(i, wf)).execution_uuid);
    await h.api('POST', `/api/executions/${ids[1]}/failed`, { failedAt: new Date().toISOString(), error: { code: 'invalid_input', message: 'no' } });

    const all = await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${wf}`);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(4);
    expect(all.body.items.map((e) => e.execution_uuid)).toEqual([...ids].reverse());
    all.body.items.forEach(expectExecutionShape);

    const page = await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${wf}&limit=2&offset=1`);
    expect(page.body).toMatchObject({ total: 4 });
    expect(page.body.items.map((e) => e.execution_uuid)).toEqual([ids[2], ids[1]]);

    const failed = await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${wf}&status=failed`);
    expect(failed.body.total).toBe(1);
    expect(failed.body.items[0]?.execution_uuid).toBe(ids[1]);
    const queued = await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${wf}&status=queued&limit=1`);
    expect(queued.body.total).toBe(3);
    expect(queued.body.items.map((e) => e.execution_uuid)).toEqual([ids[3]]);

    const global = await h.api.as(executionList)('GET', '/api/executions?limit=1');
    expect(global.body.items[0]?.execution_uuid).toBe(ids[3]);
    expect(global.body.total).toBeGreaterThanOrEqual(4);
    expect((await h.api.as(executionList)('GET', '/api/executions?status=running&workflow_uuid=none')).body).toEqual({ items: [], total: 0 });
  });

  it.each(['limit=0', 'limit=abc', 'limit=1000', 'offset=-1', 'status=done'])('answers 422 to %s', async (query) => {
    const res = await h.api.as(errorBody)('GET', `/api/executions?${query}`);
    expect(res.status).toBe(422);
    expectDetailShape(res.body);
    expect(res.body.detail[0]?.loc[0]).toBe('query');
  });

  it('answers 404 for an unknown execution', async () => {
    const res = await h.api.as(errorBody)('GET', '/api/executions/unknown');
    expect(res.status).toBe(404);
    expectDetailShape(res.body);
  });
});

describe('reports: queued → running → completed | failed', () => {
  it('moves through started and completed, storing counters, duration and urls', async () => {
    const id = (await execute()).execution_uuid;
    const started = await h.api.as(execution)('POST', `/api/executions/${id}/started`, { startedAt: '2025-05-01T10:00:00.000Z' });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: 'running', started_at: '2025-05-01T10:00:00.000Z' });

    const done = await h.api.as(execution)('POST', `/api/executions/${id}/completed`, completedBody);
    expect(done.status).toBe(200);
    const polled = (await h.api.as(execution)('GET', `/api/executions/${id}`)).body;
    expectExecutionShape(polled);
    expect(polled).toMatchObject({
      status: 'completed',
      completed_at: completedBody.completedAt,
      duration_ms: 42_000,
      n_steps: 7,
      n_agent_actions: 11,
      n_screenshots: 8,
      output_url: completedBody.outputUrl,
      video_url: completedBody.videoUrl,
      logs_url: completedBody.logsUrl,
      error: null,
    });
    expect(done.body).toEqual(polled);
  });

  it('moves through started and failed, keeping the error and null urls', async () => {
    const id = (await execute()).execution_uuid;
    await h.api('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() });
    const body = { failedAt: new Date().toISOString(), error: { code: 'timeout', message: 'ran out of time' }, durationMs: 900, nSteps: 2, nAgentActions: 1, nScreenshots: 2, outputUrl: 'o', videoUrl: null, logsUrl: null };
    const res = await h.api.as(execution)('POST', `/api/executions/${id}/failed`, body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', error: body.error, duration_ms: 900, n_steps: 2, output_url: 'o', video_url: null });
  });

  it('allows queued → failed, for failures before the run starts', async () => {
    const id = (await execute()).execution_uuid;
    const res = await h.api.as(execution)('POST', `/api/executions/${id}/failed`, { failedAt: new Date().toISOString(), error: { code: 'invalid_job', message: 'bad' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', duration_ms: null, n_steps: 0 });
  });

  it('refuses impossible transitions with 409', async () => {
    const id = (await execute()).execution_uuid;
    const conflict = async (path: string, body: unknown, expected: number) => {
      // The body of the status expected: the execution after its transition, or the error.
      const res = await h.api.as(expected === 409 ? errorBody : execution)('POST', `/api/executions/${id}/${path}`, body);
      expect(res.status, path).toBe(expected);
      if (expected === 409) {
        expectDetailShape(res.body);
        expect(res.body.detail[0]?.type).toBe('conflict');
      }
    };
    await conflict('completed', completedBody, 409);
    await conflict('started', { startedAt: '2025-05-01T10:00:00.000Z' }, 200);
    // A retried report (same timestamp) is accepted unchanged; a second start is not.
    await conflict('started', { startedAt: '2025-05-01T10:00:00.000Z' }, 200);
    await conflict('started', { startedAt: '2025-05-01T10:00:01.000Z' }, 409);
    await conflict('failed', { failedAt: '2025-05-01T10:00:02.000Z', error: { code: 'internal', message: 'x' } }, 200);
    await conflict('completed', completedBody, 409);
    await conflict('started', { startedAt: '2025-05-01T10:00:03.000Z' }, 409);
    await conflict('failed', { failedAt: '2025-05-01T10:00:09.000Z', error: { code: 'internal', message: 'again' } }, 409);
    expect((await h.api.as(execution)('GET', `/api/executions/${id}`)).body).toMatchObject({ status: 'failed', error: { code: 'internal', message: 'x' } });

    const other = (await execute()).execution_uuid;
    await h.api('POST', `/api/executions/${other}/started`, { startedAt: new Date().toISOString() });
    expect((await h.api('POST', `/api/executions/${other}/completed`, completedBody)).status).toBe(200);
    expect((await h.api('POST', `/api/executions/${other}/completed`, completedBody)).status).toBe(200);
    expect((await h.api('POST', `/api/executions/${other}/completed`, { ...completedBody, completedAt: '2025-06-01T00:00:00.000Z' })).status).toBe(409);
    expect((await h.api('POST', `/api/executions/${other}/failed`, { failedAt: new Date().toISOString(), error: { code: 'internal', message: 'x' } })).status).toBe(409);
  });

  it.each(['started', 'completed', 'failed'])('answers 404 to %s on an unknown execution', async (path) => {
    const bodies: Record<string, unknown> = {
      started: { startedAt: new Date().toISOString() },
      completed: completedBody,
      failed: { failedAt: new Date().toISOString(), error: { code: 'internal', message: 'x' } },
    };
    const res = await h.api.as(errorBody)('POST', `/api/executions/unknown-id/${path}`, bodies[path]);
    expect(res.status).toBe(404);
    expectDetailShape(res.body);
  });

  it.each([
    ['started', {}, ['body', 'startedAt']],
    ['started', { startedAt: 'yesterday' }, ['body', 'startedAt']],
    ['completed', { ...completedBody, nSteps: -1 }, ['body', 'nSteps']],
    ['completed', { ...completedBody, durationMs: 1.5 }, ['body', 'durationMs']],
    ['completed', { completedAt: completedBody.completedAt }, ['body', 'durationMs']],
    ['failed', { failedAt: new Date().toISOString() }, ['body', 'error']],
    ['failed', { failedAt: new Date().toISOString(), error: { code: 'x' } }, ['body', 'error', 'message']],
  ])('answers 422 to a bad %s body %j', async (path, body, loc) => {
    const id = (await execute()).execution_uuid;
    const res = await h.api.as(errorBody)('POST', `/api/executions/${id}/${path}`, body);
    expect(res.status).toBe(422);
    expectDetailShape(res.body);
    expect(res.body.detail.map((d) => d.loc)).toContainEqual(loc);
    expect((await h.api.as(execution)('GET', `/api/executions/${id}`)).body.status).toBe('queued');
  });
});

describe('persistence', () => {
  it('keeps workflows, versions and executions across a restart of the API', async () => {
    const id = (await execute()).execution_uuid;
    const before = (await h.api.as(versionList)('GET', `/api/workflows/${workflowId}/versions`)).body;
    await h.restartServer();
    expect((await h.api.as(execution)('GET', `/api/executions/${id}`)).body).toMatchObject({ execution_uuid: id, status: 'queued', input_payload: { ...payload, password: '{{password}}' } });
    expect((await h.api.as(versionList)('GET', `/api/workflows/${workflowId}/versions`)).body).toEqual(before);
    expect((await h.api('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
  });
});
