import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerField, answersStreamKey } from '../../src/domain/human-protocol.js';
import { stopAllDaemons, type DaemonProcess } from '../support/daemon-process.js';
import { finish, toolUse, type RecordedRequest } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from '../faults/harness.js';

/**
 * A person in the loop with a real worker daemon, real Redis, Chromium and the recording API
 * (docs/human-in-the-loop.md): the agent asks, the worker tells the API and waits on the
 * execution's answers stream, and an answer written there (as an operator's API would) resumes
 * the run. The lock is kept through a long wait; SIGTERM while waiting ends the run cleanly.
 */

const approval = toolUse('ask_human', { question: 'Place order A-1 for 42 EUR?', kind: 'approval', choices: ['approve', 'deny'] });

let rig: FaultRig;
let worker: DaemonProcess;
let redis: Redis;

beforeAll(async () => {
  rig = await startRig('human', {
    approve: (turn) => (turn === 0 ? approval : finish('completed', { placed: true })),
    deny: (turn) => (turn === 0 ? approval : finish('failed', undefined, 'the person did not approve the order')),
    silent: () => toolUse('ask_human', { question: 'Which delivery address?' }),
    shutdown: () => toolUse('ask_human', { question: 'Which delivery address?' }),
    killed: () => toolUse('ask_human', { question: 'Which delivery address?' }),
    plain: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'May I?' }) : finish('failed', undefined, 'no person to ask')),
    // Free text that starts like a yes, to an approval.
    notok: (turn) => (turn === 0 ? approval : finish('failed', undefined, 'the person did not approve the order')),
    twice: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'Which address?' }) : turn === 1 ? toolUse('ask_human', { question: 'Which floor?' }) : finish('completed', { floor: 3 })),
    pair: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'Which address?' }) : finish('completed', { asked: true })),
  });
  redis = new Redis(rig.redis.url);
  // A short job lock: a wait of a few seconds outlives several lock durations.
  worker = await rig.startWorker('human', `${rig.tmp}/work`, { QUEUE_LOCK_DURATION_MS: '3000', QUEUE_STALLED_INTERVAL_MS: '1000', VIDEO_ENABLED: 'false', SHUTDOWN_GRACE_MS: '2000' });
});

afterAll(async () => {
  redis?.disconnect();
  await rig?.close();
});

const answer = (executionId: string, value: string, by?: string) => redis.xadd(answersStreamKey('bull', rig.queueName, executionId), '*', 'answer', answerField({ answer: value, by: by ?? null }));

/** The worker's connections for the answers streams now, by name (CLIENT LIST). */
async function answersConnections(): Promise<string[]> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '')
    .filter((name) => name.startsWith('execution-worker:answers'))
    .sort();
}

const toolNames = (request: RecordedRequest) => ((request.body as { tools: Array<{ name?: string; type?: string }> }).tools ?? []).map((t) => t.name ?? t.type);
const systemText = (request: RecordedRequest) => JSON.stringify((request.body as { system: unknown }).system);

async function readArtifacts(body: Record<string, unknown>) {
  const output = JSON.parse(await readFile(fileURLToPath(body.outputUrl as string), 'utf8')) as Record<string, unknown>;
  const logs = (await readFile(fileURLToPath(body.logsUrl as string), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { output, logs };
}

describe('a person in the loop', () => {
  it('waits for an approval through several lock durations, resumes on the answer and completes', async () => {
    const id = await rig.enqueue('approve', { specification: rig.spec('approve', { approvals: ['placing an order'], humanTimeoutMs: 120_000 }) });
    const waiting = await rig.api.waitForCall(id, 'waiting');
    const first = rig.requestsOf('approve')[0]!;
    expect(toolNames(first)).toContain('ask_human');
    expect(systemText(first)).toContain('placing an order');
    const body = waiting.body as Record<string, unknown>;
    expect(body).toMatchObject({ kind: 'approval', question: 'Place order A-1 for 42 EUR?', choices: ['approve', 'deny'] });
    expect(Date.parse(body.timeoutAt as string) - Date.parse(body.waitingAt as string)).toBe(120_000);

    // Over three lock durations: the worker keeps renewing the lock while it waits, so nobody finds it lost.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    expect(callsOf(rig.api, id).finals).toHaveLength(0);
    await answer(id, 'approve', 'alice');

    const final = await rig.api.waitForFinal(id);
    expect(final.path).toMatch(/\/completed$/);
    expect(final.body).toMatchObject({ nSteps: 2, nAgentActions: 0 });
    expect((final.body as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(10_000);
    const resumed = rig.api.calls.find((c) => c.path === `/api/executions/${id}/resumed`)!;
    expect(resumed.body).toMatchObject({ answeredBy: 'alice' });
    expect(resumed.at).toBeGreaterThan(waiting.at);
    onlyFinal(rig.api, id);
    expect(worker.find((l) => l.msg.includes('job lock lost'))).toHaveLength(0);

    // The model got the answer and a fresh view of the page.
    const second = rig.requestsOf('approve')[1]!;
    const messages = (second.body as { messages: Array<{ role: string; content: Array<{ type: string; content?: Array<{ type: string; text?: string }> }> }> }).messages;
    const result = messages.at(-1)!.content.find((b) => b.type === 'tool_result')!;
    expect(JSON.stringify(result.content)).toContain('alice answered: approve');
    expect(result.content!.some((b) => b.type === 'image')).toBe(true);

    const { output, logs } = await readArtifacts(final.body as Record<string, unknown>);
    expect(output.human).toEqual([
      expect.objectContaining({ kind: 'approval', question: 'Place order A-1 for 42 EUR?', answer: 'approve', by: 'alice', askedAt: expect.any(String), answeredAt: expect.any(String) }),
    ]);
    const types = logs.map((l) => l.type);
    expect(types.indexOf('waiting')).toBeGreaterThan(-1);
    expect(types.indexOf('resumed')).toBeGreaterThan(types.indexOf('waiting'));
    // The stream is gone once the run is over.
    expect(await redis.exists(answersStreamKey('bull', rig.queueName, id))).toBe(0);
  });

  it('fails with approval_denied when the person denies and the model stops; a second answer is ignored', async () => {
    const id = await rig.enqueue('deny', { specification: rig.spec('deny', { approvals: ['placing an order'], humanTimeoutMs: 120_000 }) });
    await rig.api.waitForCall(id, 'waiting');
    await answer(id, 'deny', 'bob');
    await answer(id, 'approve', 'mallory');
    const final = await rig.api.waitForFinal(id);
    expect(final.path).toMatch(/\/failed$/);
    expect(final.body).toMatchObject({ error: { code: 'approval_denied' } });
    const { output } = await readArtifacts(final.body as Record<string, unknown>);
    expect(output.human).toEqual([expect.objectContaining({ answer: 'deny', by: 'bob' })]);
    const second = rig.requestsOf('deny')[1]!;
    expect(JSON.stringify(second.body)).toContain('This is not an approval');
    await worker.waitForLog((l) => l.msg.startsWith('answer ignored') && l.executionId === id);
  });

  it('reads free text that starts like a yes as a refusal: the run fails with approval_denied', async () => {
    const id = await rig.enqueue('notok', { specification: rig.spec('notok', { approvals: ['placing an order'], humanTimeoutMs: 120_000 }) });
    await rig.api.waitForCall(id, 'waiting');
    await answer(id, 'OK, no - do not pay', 'carol');
    const final = await rig.api.waitForFinal(id);
    expect(final.body).toMatchObject({ error: { code: 'approval_denied' } });
    const told = JSON.stringify(rig.requestsOf('notok')[1]!.body);
    expect(told).toContain('carol answered: OK, no - do not pay');
    expect(told).toContain('This is not an approval');
    expect(told).not.toContain('Approved: you may take the action');
    const { logs } = await readArtifacts(final.body as Record<string, unknown>);
    expect(logs.find((l) => l.type === 'resumed')).toMatchObject({ kind: 'approval', outcome: 'denied', answeredBy: 'carol' });
  });

  it('draws every question of a run on one humanTimeoutMs: the second gets what the first left, then human_timeout', async () => {
    const id = await rig.enqueue('twice', { specification: rig.spec('twice', { humanTimeoutMs: 8_000 }) });
    const first = (await rig.api.waitForCall(id, 'waiting')).body as Record<string, string>;
    expect(Date.parse(first.timeoutAt!) - Date.parse(first.waitingAt!)).toBe(8_000);
    await answer(id, 'the office');
    const final = await rig.api.waitForFinal(id);
    expect(final.body).toMatchObject({ error: { code: 'human_timeout' } });
    const waits = rig.api.calls.filter((c) => c.path === `/api/executions/${id}/waiting`).map((c) => c.body as Record<string, string>);
    const resumed = rig.api.calls.find((c) => c.path === `/api/executions/${id}/resumed`)!.body as Record<string, string>;
    expect(waits.map((w) => w.question)).toEqual(['Which address?', 'Which floor?']);
    // What the first wait took is gone from the second's deadline, to the millisecond.
    const spent = Date.parse(resumed.resumedAt!) - Date.parse(first.waitingAt!);
    expect(Date.parse(waits[1]!.timeoutAt!) - Date.parse(waits[1]!.waitingAt!)).toBe(8_000 - spent);
    // The run ended by its waiting budget: no later than the second deadline and what the end takes.
    expect(final.at).toBeGreaterThanOrEqual(Date.parse(waits[1]!.timeoutAt!));
  });

  it('serves the runs waiting at once on one reader connection, each hearing its own answer', async () => {
    const ids = [await rig.enqueue('pair', { specification: rig.spec('pair', { humanTimeoutMs: 120_000 }) }), await rig.enqueue('pair', { specification: rig.spec('pair', { humanTimeoutMs: 120_000 }) })];
    for (const id of ids) await rig.api.waitForCall(id, 'waiting');
    // The first run heard its answer, so the reader is connected; the other run still waits.
    await answer(ids[0]!, 'address 0', 'person 0');
    await rig.api.waitForCall(ids[0]!, 'resumed');
    expect(await answersConnections()).toEqual(['execution-worker:answers', 'execution-worker:answers-reader']);
    await answer(ids[1]!, 'address 1', 'person 1');
    for (const [i, id] of ids.entries()) {
      const final = await rig.api.waitForFinal(id);
      expect(final.path).toMatch(/\/completed$/);
      const { output } = await readArtifacts(final.body as Record<string, unknown>);
      expect(output.human).toEqual([expect.objectContaining({ answer: `address ${i}`, by: `person ${i}` })]);
    }
  });

  it('fails with human_timeout when nobody answers, the wait not counted against a shorter timeoutMs', async () => {
    const id = await rig.enqueue('silent', { specification: rig.spec('silent', { timeoutMs: 30_000, humanTimeoutMs: 32_000 }) });
    const waiting = await rig.api.waitForCall(id, 'waiting');
    const final = await rig.api.waitForFinal(id);
    expect(final.path).toMatch(/\/failed$/);
    expect(final.body).toMatchObject({ error: { code: 'human_timeout' } });
    // It ended by the human timeout, after the run's own time limit would have passed had the
    // wait counted against it (that would have been `timeout`, 30 s after started).
    expect(final.at - waiting.at).toBeGreaterThanOrEqual(31_000);
    expect((final.body as { durationMs: number }).durationMs).toBeGreaterThan(30_000);
    const { output } = await readArtifacts(final.body as Record<string, unknown>);
    expect(output.human).toEqual([expect.objectContaining({ question: 'Which delivery address?', answer: null, answeredAt: null })]);
  });

  it('does not offer ask_human without a human setting', async () => {
    const id = await rig.enqueue('plain');
    const final = await rig.api.waitForFinal(id);
    const [first, second] = rig.requestsOf('plain');
    expect(toolNames(first!)).not.toContain('ask_human');
    expect(systemText(first!)).not.toContain('ask_human');
    expect(JSON.stringify(second!.body)).toContain('unknown tool');
    expect(callsOf(rig.api, id).finals).toHaveLength(1);
    expect(rig.api.calls.filter((c) => c.path === `/api/executions/${id}/waiting`)).toHaveLength(0);
    expect(final.body).toMatchObject({ error: { code: 'agent_failed' } });
  });

  it('stops a waiting run with worker_shutdown on SIGTERM', async () => {
    const id = await rig.enqueue('shutdown', { specification: rig.spec('shutdown', { humanTimeoutMs: 3_600_000 }) });
    await rig.api.waitForCall(id, 'waiting');
    worker.signal('SIGTERM');
    const final = await rig.api.waitForFinal(id);
    expect(final.body).toMatchObject({ error: { code: 'worker_shutdown' } });
    expect(await worker.exited, worker.tail()).toEqual({ code: 0, signal: null });
    await stopAllDaemons();
  });

  it('asks under HUMAN_TIMEOUT_MS, and reports a run whose worker is killed while it waits as worker_lost', async () => {
    const locks = { QUEUE_LOCK_DURATION_MS: '3000', QUEUE_STALLED_INTERVAL_MS: '1000', WORKER_CONCURRENCY: '1', VIDEO_ENABLED: 'false' };
    // The worker's HUMAN_TIMEOUT_MS lets a specification that says nothing ask a person.
    const doomed = await rig.startWorker('doomed', `${rig.tmp}/work-doomed`, { ...locks, HUMAN_TIMEOUT_MS: '3600000' });
    const id = await rig.enqueue('killed');
    const waiting = (await rig.api.waitForCall(id, 'waiting')).body as Record<string, string>;
    expect(Date.parse(waiting.timeoutAt!) - Date.parse(waiting.waitingAt!)).toBe(3_600_000);
    const survivor = await rig.startWorker('survivor', `${rig.tmp}/work-survivor`, locks);
    doomed.signal('SIGKILL');
    const final = await rig.api.waitForFinal(id);
    expect(final.body).toMatchObject({ error: { code: 'worker_lost' } });
    await survivor.waitForLog((l) => l.msg === 'execution lost: its worker stopped mid-run' && l.executionId === id);
    // An answer that comes after the end changes nothing: nobody reads it, no report follows.
    await answer(id, 'the office');
    expect(callsOf(rig.api, id).finals).toHaveLength(1);
    await stopAllDaemons();
  });
});
