import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answersStreamKey } from '../../src/domain/human-protocol.js';
import { expectDetailShape, startHarness, type Harness } from './local-api-harness.js';

/**
 * A person in the loop on the local API (docs/human-in-the-loop.md): the worker's `waiting` and
 * `resumed` reports move the status, answers and input go to the execution's answers stream only
 * while it waits, and the first answer to a question wins.
 */

let h: Harness;
let redis: Redis;

beforeAll(async () => {
  h = await startHarness();
  redis = new Redis(h.redis.url);
});
afterAll(async () => {
  redis?.disconnect();
  await h?.close();
});

async function runningExecution(): Promise<string> {
  const created = await h.call('POST', '/api/workflows', { name: `wf ${Math.random()}`, prompt: 'Pay the invoice', allowedDomains: ['shop.test'], approvals: ['paying'], human_timeout_ms: 60_000 });
  expect(created.status).toBe(201);
  expect(created.body.current_version.specification).toMatchObject({ approvals: ['paying'], humanTimeoutMs: 60_000 });
  const id = (await h.call('POST', `/api/workflows/${created.body.workflow_uuid}/execute`, {})).body.execution_uuid as string;
  expect((await h.call('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
  return id;
}

const entries = async (id: string) => ((await redis.xrange(answersStreamKey('bull', h.queueName, id), '-', '+')) as Array<[string, string[]]>).map(([, fields]) => fields);

describe('a person in the loop on the local API', () => {
  it('reads waiting with the question, takes the first answer only, and runs again on resumed', async () => {
    const id = await runningExecution();
    expect((await h.call('POST', `/api/executions/${id}/answer`, { answer: 'approve' })).status).toBe(409);

    const waitingAt = new Date().toISOString();
    const report = { waitingAt, kind: 'approval', question: 'Pay 120 EUR?', choices: ['approve', 'deny'], timeoutAt: new Date(Date.now() + 60_000).toISOString() };
    const waiting = await h.call('POST', `/api/executions/${id}/waiting`, report);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toMatchObject({ status: 'waiting', waiting: { kind: 'approval', question: 'Pay 120 EUR?', choices: ['approve', 'deny'], waitingAt } });
    // The same report again (a retry) changes nothing.
    expect((await h.call('POST', `/api/executions/${id}/waiting`, report)).status).toBe(200);
    expect((await h.call('GET', '/api/executions?status=waiting')).body.items.map((e: { execution_uuid: string }) => e.execution_uuid)).toContain(id);

    const bad = await h.call('POST', `/api/executions/${id}/answer`, { answer: '', who: 'x' });
    expect(bad.status).toBe(422);
    expectDetailShape(bad.body);

    expect((await h.call('POST', `/api/executions/${id}/input`, { kind: 'click', x: 0.2, y: 0.3 })).status).toBe(202);
    expect((await h.call('POST', `/api/executions/${id}/input`, { kind: 'text', text: 'hunter2' })).status).toBe(202);
    expect((await h.call('POST', `/api/executions/${id}/input`, { kind: 'click', x: 2, y: 0.3 })).status).toBe(422);
    expect((await h.call('POST', `/api/executions/${id}/input`, { kind: 'key' })).status).toBe(422);
    expect((await h.call('POST', `/api/executions/${id}/answer`, { answer: 'approve', by: 'alice' })).status).toBe(202);
    expect((await h.call('POST', `/api/executions/${id}/answer`, { answer: 'deny', by: 'bob' })).status).toBe(409);
    expect(await entries(id)).toEqual([
      ['input', JSON.stringify({ kind: 'click', x: 0.2, y: 0.3, button: 'left' })],
      ['input', JSON.stringify({ kind: 'text', text: 'hunter2' })],
      ['answer', JSON.stringify({ answer: 'approve', by: 'alice' })],
    ]);

    const resumed = await h.call('POST', `/api/executions/${id}/resumed`, { resumedAt: new Date().toISOString(), answeredBy: 'alice' });
    expect(resumed.body).toMatchObject({ status: 'running', waiting: null, answered_by: 'alice' });
    expect((await h.call('POST', `/api/executions/${id}/input`, { kind: 'key', key: 'Enter' })).status).toBe(409);

    // A later question can be answered again; the run may end while it waits.
    const again = new Date(Date.now() + 1).toISOString();
    expect((await h.call('POST', `/api/executions/${id}/waiting`, { ...report, waitingAt: again })).status).toBe(200);
    expect((await h.call('POST', `/api/executions/${id}/answer`, { answer: 'approve' })).status).toBe(202);
    const failed = await h.call('POST', `/api/executions/${id}/failed`, { failedAt: new Date().toISOString(), error: { code: 'human_timeout', message: 'nobody answered' } });
    expect(failed.body).toMatchObject({ status: 'failed', waiting: null });
    expect((await h.call('POST', `/api/executions/${id}/answer`, { answer: 'approve' })).status).toBe(409);
  });

  it('publishes the routes in the OpenAPI document', async () => {
    const doc = (await h.call('GET', '/openapi.json')).body as { paths: Record<string, unknown> };
    for (const route of ['waiting', 'resumed', 'answer', 'input']) expect(Object.keys(doc.paths)).toContain(`/api/executions/{execution_uuid}/${route}`);
  });
});
