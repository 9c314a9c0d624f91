import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution, executionList } from '../../src/contract/executions.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { workflow } from '../../src/contract/workflows.js';
import { ANSWERS_STREAM_GRACE_MS, answersStreamKey } from '../../src/domain/human-protocol.js';
import { API_KEY, expectDetailShape, startHarness, type Harness } from './local-api-harness.js';

/**
 * A person in the loop on the local API (docs/human-in-the-loop.md): the worker's `waiting` and
 * `resumed` reports move the status, answers and input go to the execution's answers stream only
 * while it waits, the first answer to a question wins, an answer is recorded under the identity
 * the request signed in with, and the stream expires.
 */

let h: Harness;
let redis: Redis;

beforeAll(async () => {
  h = await startHarness({ network: true });
  redis = new Redis(h.redis.url);
});
afterAll(async () => {
  redis?.disconnect();
  await h?.close();
});

async function runningExecution(): Promise<string> {
  const created = await h.api.as(workflow)('POST', '/api/workflows', { name: `wf ${Math.random()}`, prompt: 'Pay the invoice', allowedDomains: ['shop.test'], approvals: ['paying'], human_timeout_ms: 60_000 });
  expect(created.status).toBe(201);
  expect(created.body.current_version?.specification).toMatchObject({ approvals: ['paying'], humanTimeoutMs: 60_000 });
  const id = (await h.api.as(execution)('POST', `/api/workflows/${created.body.workflow_uuid}/execute`, {})).body.execution_uuid;
  expect((await h.api('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
  return id;
}

/** An execution that waits now, as a worker would report it. */
async function waitingExecution(kind: 'question' | 'approval' | 'takeover', timeoutMs = 60_000): Promise<string> {
  const id = await runningExecution();
  const waitingAt = new Date().toISOString();
  const report = { waitingAt, kind, question: `A ${kind}?`, choices: null, timeoutAt: new Date(Date.parse(waitingAt) + timeoutMs).toISOString() };
  expect((await h.api('POST', `/api/executions/${id}/waiting`, report)).status).toBe(200);
  return id;
}

/** Who a key signs in as: its tag as the access check computes it (a digest, never the key). */
const identityOf = (key: string) => (key === API_KEY ? 'bootstrap-2' : 'bootstrap-1');

const entries = async (id: string) => ((await redis.xrange(answersStreamKey('bull', h.queueName, id), '-', '+')) as Array<[string, string[]]>).map(([, fields]) => fields);

describe('a person in the loop on the local API', () => {
  it('reads waiting with the question, takes the first answer only, and runs again on resumed', async () => {
    const id = await runningExecution();
    expect((await h.api('POST', `/api/executions/${id}/answer`, { answer: 'approve' })).status).toBe(409);

    const waitingAt = new Date().toISOString();
    const report = { waitingAt, kind: 'approval', question: 'Pay 120 EUR?', choices: ['approve', 'deny'], timeoutAt: new Date(Date.now() + 60_000).toISOString() };
    const waiting = await h.api.as(execution)('POST', `/api/executions/${id}/waiting`, report);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toMatchObject({ status: 'waiting', waiting: { kind: 'approval', question: 'Pay 120 EUR?', choices: ['approve', 'deny'], waitingAt } });
    // The same report again (a retry) changes nothing.
    expect((await h.api('POST', `/api/executions/${id}/waiting`, report)).status).toBe(200);
    expect((await h.api.as(executionList)('GET', '/api/executions?status=waiting')).body.items.map((e) => e.execution_uuid)).toContain(id);

    const bad = await h.api.as(errorBody)('POST', `/api/executions/${id}/answer`, { answer: '', who: 'x' });
    expect(bad.status).toBe(422);
    expectDetailShape(bad.body);

    expect((await h.api('POST', `/api/executions/${id}/input`, { kind: 'click', x: 0.2, y: 0.3 })).status).toBe(202);
    expect((await h.api('POST', `/api/executions/${id}/input`, { kind: 'text', text: 'hunter2' })).status).toBe(202);
    expect((await h.api('POST', `/api/executions/${id}/input`, { kind: 'click', x: 2, y: 0.3 })).status).toBe(422);
    expect((await h.api('POST', `/api/executions/${id}/input`, { kind: 'key' })).status).toBe(422);
    expect((await h.api('POST', `/api/executions/${id}/answer`, { decision: 'approve' })).status).toBe(202);
    expect((await h.api('POST', `/api/executions/${id}/answer`, { decision: 'deny' })).status).toBe(409);
    const by = identityOf(API_KEY);
    expect(await entries(id)).toEqual([
      ['input', JSON.stringify({ kind: 'click', x: 0.2, y: 0.3, button: 'left' })],
      ['input', JSON.stringify({ kind: 'text', text: 'hunter2' })],
      ['answer', JSON.stringify({ answer: 'approve', decision: 'approve', by })],
    ]);

    const resumed = await h.api.as(execution)('POST', `/api/executions/${id}/resumed`, { resumedAt: new Date().toISOString(), answeredBy: by });
    expect(resumed.body).toMatchObject({ status: 'running', waiting: null, answered_by: by });
    expect((await h.api('POST', `/api/executions/${id}/input`, { kind: 'key', key: 'Enter' })).status).toBe(409);

    // A later question can be answered again; the run may end while it waits.
    const again = new Date(Date.now() + 1).toISOString();
    expect((await h.api('POST', `/api/executions/${id}/waiting`, { ...report, waitingAt: again })).status).toBe(200);
    expect((await h.api('POST', `/api/executions/${id}/answer`, { answer: 'approve' })).status).toBe(202);
    const failed = await h.api.as(execution)('POST', `/api/executions/${id}/failed`, { failedAt: new Date().toISOString(), error: { code: 'human_timeout', message: 'nobody answered' } });
    expect(failed.body).toMatchObject({ status: 'failed', waiting: null });
    expect((await h.api('POST', `/api/executions/${id}/answer`, { answer: 'approve' })).status).toBe(409);
  });

  it("records who answered as the request's signed-in identity, never the body's by", async () => {
    const answerAs = async (headers: Record<string, string>, body: Record<string, unknown>) => {
      const id = await waitingExecution('question');
      const sent = await h.api('POST', `/api/executions/${id}/answer`, body, headers);
      expect(sent.status).toBe(202);
      const [[, json]] = (await entries(id)) as [[string, string]];
      return (JSON.parse(json) as { by?: string }).by;
    };
    const byKey = await answerAs({ 'X-Service-Key': API_KEY }, { answer: 'the office', by: 'mallory' });
    expect(byKey).not.toBe('mallory');
    expect(byKey).toBe(identityOf(API_KEY));
    // Another key is another identity; the key itself is never written.
    const byOther = await answerAs({ 'X-Service-Key': 'other-key' }, { answer: 'the office', by: byKey });
    expect(byOther).not.toBe(byKey);
    expect(JSON.stringify([byKey, byOther])).not.toContain(API_KEY);
    // A dashboard session answers as the key it was opened with.
    const signIn = await fetch(`${h.server.url}/api/session`, { method: 'POST', headers: { 'X-Service-Key': API_KEY } });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    expect(await answerAs({ Cookie: cookie, Origin: h.server.url }, { answer: 'the office', by: 'mallory' })).toBe(byKey);
    // However the path is spelled, an answer with no signed-in identity is never written.
    const id = await waitingExecution('question');
    const keyless = await fetch(`${h.server.url}/%61pi/executions/${id}/answer`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ answer: 'the office', by: 'mallory' }) });
    expect(keyless.status).not.toBe(202);
    expect(await entries(id)).toEqual([]);
  });

  it('takes a decision for an approval only, and an answer or a decision always', async () => {
    const approval = await waitingExecution('approval');
    expect((await h.api('POST', `/api/executions/${approval}/answer`, {})).status).toBe(422);
    expect((await h.api('POST', `/api/executions/${approval}/answer`, { decision: 'yes' })).status).toBe(422);
    expect((await h.api('POST', `/api/executions/${approval}/answer`, { answer: 'too dear', decision: 'deny' })).status).toBe(202);
    expect(await entries(approval)).toEqual([['answer', JSON.stringify({ answer: 'too dear', decision: 'deny', by: identityOf(API_KEY) })]]);

    const question = await waitingExecution('question');
    const refused = await h.api.as(errorBody)('POST', `/api/executions/${question}/answer`, { decision: 'approve' });
    expect(refused.status).toBe(422);
    expect(refused.body.detail?.[0]).toMatchObject({ loc: ['body', 'decision'] });
    expect(await entries(question)).toEqual([]);
  });

  it("gives the answers stream an expiry of the question's deadline and a grace, on every write", async () => {
    const id = await waitingExecution('takeover', 600_000);
    const key = answersStreamKey('bull', h.queueName, id);
    expect((await h.api('POST', `/api/executions/${id}/input`, { kind: 'key', key: 'Tab' })).status).toBe(202);
    const afterInput = await redis.pttl(key);
    expect(afterInput).toBeGreaterThan(ANSWERS_STREAM_GRACE_MS);
    expect(afterInput).toBeLessThanOrEqual(600_000 + ANSWERS_STREAM_GRACE_MS);
    // An expiry cut short by hand is set again by the next write.
    await redis.pexpire(key, 5_000);
    expect((await h.api('POST', `/api/executions/${id}/answer`, { answer: 'done' })).status).toBe(202);
    expect(await redis.pttl(key)).toBeGreaterThan(ANSWERS_STREAM_GRACE_MS);
  });

  it('publishes the routes in the OpenAPI document', async () => {
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    for (const route of ['waiting', 'resumed', 'answer', 'input']) expect(Object.keys(doc.paths)).toContain(`/api/executions/{execution_uuid}/${route}`);
  });
});
