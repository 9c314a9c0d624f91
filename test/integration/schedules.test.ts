import { randomBytes, randomUUID } from 'node:crypto';
import { Job, Queue, type QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schedulesQueueName } from '../../src/local-service/schedules.js';
import { errorBody } from '../../src/contract/api-errors.js';
import { executionList } from '../../src/contract/executions.js';
import { versionList, workflow, workflowList, workflowVersion } from '../../src/contract/workflows.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { startLocalServer, type LocalServer, type LocalServerOptions } from '../../src/local-service/server.js';
import { API_KEY, expectDetailShape, silentLogger } from '../contract/local-api-harness.js';
import { httpCall } from '../support/call.js';
import { openQueueEvents } from '../support/queue-events.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * Triggers of the local API on a real Redis: two local API instances share one store and one
 * queue, as two `serve` processes do, with the test-only floor override so a version can be
 * scheduled every second. Ticks are counted from the scheduler's own jobs and events, never
 * from the clock: the bounds below are generous limits, not expectations.
 */

let redis: TestRedis;
let a: LocalServer;
let b: LocalServer;
/** A third instance on the same store without the override: the floor of once a minute. */
let strict: LocalServer;
let ticks: Queue;
let executionQueue: Queue;
let events: QueueEvents;
let options: LocalServerOptions;
const tickWakers = new Set<() => void>();

/** Generous: a tick is due every second; this is for a machine under heavy load. */
const LIMIT_MS = 60_000;

beforeAll(async () => {
  redis = await startRedis();
  const queueName = `executions-${randomUUID().slice(0, 8)}`;
  options = {
    port: 0,
    apiKeys: [API_KEY],
    redisUrl: redis.url,
    queueName,
    queuePrefix: 'bull',
    keyPrefix: `{api-${randomUUID().slice(0, 8)}}:`,
    logger: silentLogger,
    allowEverySecond: true,
    // The default inputs below have secrets: kept sealed with these (docs/secrets.md#at-rest).
    inputKeys: parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`),
  };
  a = await startLocalServer(options);
  b = await startLocalServer(options);
  strict = await startLocalServer({ ...options, allowEverySecond: false });
  ticks = new Queue(schedulesQueueName(queueName), { connection: { url: redis.url }, prefix: 'bull' });
  executionQueue = new Queue(queueName, { connection: { url: redis.url }, prefix: 'bull' });
  events = await openQueueEvents(ticks, redis.url);
  for (const name of ['completed', 'failed'] as const) events.on(name, () => [...tickWakers].forEach((wake) => wake()));
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([a?.close(), b?.close(), strict?.close(), events?.close(), ticks?.close(), executionQueue?.close()]);
  await redis?.stop();
});

/** Requests to one of the instances, as the test's service key. */
const call = (server: LocalServer) => httpCall(server.url, { 'X-Service-Key': API_KEY });

/** The finished tick jobs of one workflow's scheduler (their ids are `repeat:{workflowId}:{tick ms}`). */
async function finishedTicks(workflowId: string): Promise<Job[]> {
  const jobs = await ticks.getJobs(['completed', 'failed'], 0, -1);
  return jobs.filter((j) => j.id?.startsWith(`repeat:${workflowId}:`));
}

/** Resolves once `count` ticks of the workflow have finished, woken by the queue's events. */
async function waitForTicks(workflowId: string, count: number): Promise<Job[]> {
  const deadline = Date.now() + LIMIT_MS;
  for (;;) {
    const woken = new Promise<void>((resolve) => {
      const wake = () => {
        tickWakers.delete(wake);
        resolve();
      };
      tickWakers.add(wake);
      setTimeout(wake, Math.max(0, deadline - Date.now())).unref();
    });
    const done = await finishedTicks(workflowId);
    if (done.length >= count) return done;
    if (Date.now() >= deadline) throw new Error(`only ${done.length} of ${count} ticks finished in ${LIMIT_MS} ms`);
    await woken;
  }
}

/** Waits for every tick job of the workflow still waiting or running to finish. */
async function settleTicks(workflowId: string): Promise<void> {
  const pending = (await ticks.getJobs(['active', 'wait', 'delayed', 'prioritized'], 0, -1)).filter((j) => j.id?.startsWith(`repeat:${workflowId}:`));
  await Promise.all(pending.map((j) => j.waitUntilFinished(events, LIMIT_MS).catch(() => undefined)));
}

async function scheduleExecutions(workflowId: string): Promise<Record<string, unknown>[]> {
  const list = (await call(a).as(executionList)('GET', `/api/executions?workflow_uuid=${workflowId}&limit=200`)).body;
  return (list.items as Record<string, unknown>[]).filter((e) => e.trigger === 'schedule');
}

const payloadSchema = { type: 'object', required: ['order'], properties: { order: { type: 'string' }, password: { type: 'string', writeOnly: true } } };

describe('a version scheduled every second', () => {
  it('makes exactly one execution per tick with two instances serving, stops when unpublished, and loses its scheduler with the workflow', async () => {
    const defaultInput = { order: 'A-1', password: 'hunter22' };
    const created = await call(a).as(workflow)('POST', '/api/workflows', {
      name: 'Nightly export',
      prompt: 'Export the orders',
      allowed_domains: ['shop.test'],
      payload_schema: payloadSchema,
      trigger_type: 'schedule',
      schedule_expression: '* * * * * *',
      configuration: { inputPayload: defaultInput, note: 'kept as given' },
    });
    expect(created.status).toBe(201);
    const workflowId = created.body.workflow_uuid as string;
    const version = created.body.current_version!;
    expect(version).toMatchObject({ status: 'published', trigger_type: 'schedule', schedule_expression: '* * * * * *', is_current: true });
    // The secret field of the default input is shown as its placeholder.
    expect(version.configuration).toEqual({ inputPayload: { order: 'A-1', password: '{{password}}' }, note: 'kept as given' });
    expect(version.specification).toEqual({ prompt: 'Export the orders', allowedDomains: ['shop.test'], payloadSchema });
    const scheduler = await ticks.getJobScheduler(workflowId);
    expect(scheduler).toMatchObject({ key: workflowId, pattern: '* * * * * *', tz: 'UTC' });
    // The answer read the scheduler's next tick; a tick may have passed since (one a second).
    const nextRun = Date.parse(version.next_run_at as string);
    expect(nextRun % 1000).toBe(0);
    expect(nextRun).toBeLessThanOrEqual(scheduler?.next as number);

    await waitForTicks(workflowId, 5);
    // Unpublished through the other instance: the scheduler and its next job go at once.
    const unpublished = await call(b)('POST', `/api/workflows/${workflowId}/versions/${version.workflow_version_uuid as string}/unpublish`);
    expect(unpublished.status).toBe(200);
    expect(unpublished.body).toMatchObject({ status: 'draft', next_run_at: null });
    expect(await ticks.getJobScheduler(workflowId)).toBeUndefined();
    await settleTicks(workflowId);
    expect(await ticks.getJobs(['delayed', 'wait', 'active', 'prioritized'], 0, -1)).toEqual([]);

    const done = await finishedTicks(workflowId);
    expect(done.filter((j) => j.failedReason)).toEqual([]);
    const made = done.map((j) => (j.returnvalue as { executionId?: string }).executionId).filter((id): id is string => id !== undefined);
    // A tick that was already due when the version was unpublished makes nothing.
    expect(made.length).toBeGreaterThanOrEqual(5);
    expect(new Set(done.map((j) => j.id)).size).toBe(done.length);
    expect(new Set(made).size).toBe(made.length);

    // One execution per tick, each exactly as an execute call makes it, marked as scheduled.
    const executions = await scheduleExecutions(workflowId);
    expect(executions.map((e) => e.execution_uuid).sort()).toEqual([...made].sort());
    for (const e of executions) {
      expect(e).toMatchObject({ status: 'queued', trigger: 'schedule', workflow_version_uuid: version.workflow_version_uuid, input_payload: { order: 'A-1', password: '{{password}}' } });
      const job = await executionQueue.getJob(e.execution_uuid as string);
      expect(job?.data).toEqual({
        executionId: e.execution_uuid,
        workflowId,
        workflowVersionId: version.workflow_version_uuid,
        inputPayload: defaultInput,
        specification: version.specification,
      });
    }
    // Nothing is left that could fire: no scheduler, no tick job waiting.
    expect(await scheduleExecutions(workflowId)).toHaveLength(executions.length);

    // Published again, it runs again.
    const republished = await call(a).as(workflowVersion)('POST', `/api/workflows/${workflowId}/versions/${version.workflow_version_uuid as string}/publish`);
    expect(republished.body).toMatchObject({ status: 'published', trigger_type: 'schedule' });
    expect(republished.body.next_run_at).toEqual(expect.any(String));
    await waitForTicks(workflowId, done.length + 1);

    expect((await call(b)('DELETE', `/api/workflows/${workflowId}`)).status).toBe(204);
    expect(await ticks.getJobScheduler(workflowId)).toBeUndefined();
    expect(await ticks.getJobSchedulersCount()).toBe(0);
    await settleTicks(workflowId);
    expect(await ticks.getJobs(['delayed', 'wait'], 0, -1)).toEqual([]);
  }, 180_000);

  it('follows edits: a new expression or version replaces the scheduler, a manual version removes it', async () => {
    const created = (await call(a).as(workflow)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], triggerType: 'schedule', scheduleExpression: 'TZ=Europe/Paris 0 9 * * 1-5' })).body;
    const id = created.workflow_uuid as string;
    expect(await ticks.getJobScheduler(id)).toMatchObject({ pattern: '0 9 * * 1-5', tz: 'Europe/Paris' });

    const edited = await call(b).as(workflow)('PATCH', `/api/workflows/${id}`, { scheduleExpression: '30 7 * * *' });
    expect(edited.status).toBe(200);
    const v2 = edited.body.current_version!;
    expect(v2).toMatchObject({ version: 2, status: 'published', trigger_type: 'schedule', schedule_expression: '30 7 * * *' });
    const scheduler = await ticks.getJobScheduler(id);
    expect(scheduler).toMatchObject({ pattern: '30 7 * * *', tz: 'UTC', template: { data: { workflowId: id, workflowVersionId: v2.workflow_version_uuid } } });
    expect(v2.next_run_at).toBe(new Date(scheduler?.next as number).toISOString());
    expect(new Date(v2.next_run_at as string).getUTCHours() * 60 + new Date(v2.next_run_at as string).getUTCMinutes()).toBe(7 * 60 + 30);

    // A prompt edit keeps the trigger; the scheduler follows the new version.
    const v3 = (await call(a).as(workflow)('PATCH', `/api/workflows/${id}`, { prompt: 'p2' })).body.current_version!;
    expect(v3).toMatchObject({ trigger_type: 'schedule', schedule_expression: '30 7 * * *' });
    expect((await ticks.getJobScheduler(id))?.template?.data).toEqual({ workflowId: id, workflowVersionId: v3.workflow_version_uuid });
    // The versions list shows each version's trigger; only the current one has a next run.
    const versions = (await call(a).as(versionList)('GET', `/api/workflows/${id}/versions`)).body.items as Record<string, unknown>[];
    expect(versions.map((v) => [v.version, v.schedule_expression, v.next_run_at === null])).toEqual([
      [1, 'TZ=Europe/Paris 0 9 * * 1-5', true],
      [2, '30 7 * * *', true],
      [3, '30 7 * * *', false],
    ]);

    const manual = await call(b).as(workflow)('PATCH', `/api/workflows/${id}`, { trigger_type: 'manual' });
    expect(manual.body.current_version).toMatchObject({ trigger_type: 'manual', schedule_expression: null, next_run_at: null });
    expect(await ticks.getJobScheduler(id)).toBeUndefined();
  });

  it('puts a scheduler right at start when a change was cut short', async () => {
    const id = (await call(a).as(workflow)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], triggerType: 'schedule', scheduleExpression: '0 3 * * *' })).body.workflow_uuid as string;
    await ticks.removeJobScheduler(id);
    await ticks.upsertJobScheduler('no-such-workflow', { pattern: '0 4 * * *' }, { name: 'tick', data: { workflowId: 'no-such-workflow', workflowVersionId: 'x' } });
    const restarted = await startLocalServer({ ...options, allowEverySecond: false });
    try {
      expect(await ticks.getJobScheduler(id)).toMatchObject({ pattern: '0 3 * * *' });
      expect(await ticks.getJobScheduler('no-such-workflow')).toBeUndefined();
    } finally {
      await restarted.close();
      await call(a)('DELETE', `/api/workflows/${id}`);
    }
  });
});

describe('drafts', () => {
  it('are stored, listed and run only when named until published; a draft edit leaves the published version running', async () => {
    const created = await call(a).as(workflow)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], status: 'draft', triggerType: 'schedule', scheduleExpression: '* * * * *' });
    expect(created.status).toBe(201);
    const id = created.body.workflow_uuid as string;
    const v1 = created.body.current_version!;
    expect(v1).toMatchObject({ version: 1, status: 'draft', trigger_type: 'schedule', next_run_at: null });
    expect(await ticks.getJobScheduler(id)).toBeUndefined();

    const refused = await call(b)('POST', `/api/workflows/${id}/execute`, { inputPayload: null });
    expect(refused.status).toBe(422);
    expectDetailShape(refused.body);
    expect(refused.body.detail[0]).toMatchObject({ loc: ['path', 'workflowId'], type: 'version_draft' });
    expect(refused.body.detail[0]?.msg).toContain('draft');
    expect((await call(a).as(executionList)('GET', `/api/executions?workflow_uuid=${id}`)).body.total).toBe(0);

    const published = await call(a)('POST', `/api/workflows/${id}/versions/${v1.workflow_version_uuid as string}/publish`);
    expect(published.body).toMatchObject({ status: 'published', version: 1 });
    expect(await ticks.getJobScheduler(id)).toMatchObject({ pattern: '* * * * *' });
    const executed = await call(b)('POST', `/api/workflows/${id}/execute`);
    expect(executed.status).toBe(201);
    expect(executed.body).toMatchObject({ trigger: 'manual', input_payload: null });

    // An edit saved as a draft is a new current version that takes nothing offline: the
    // published version before it keeps running by default and on its schedule.
    const draft = await call(a).as(workflow)('PATCH', `/api/workflows/${id}`, { prompt: 'p2', status: 'draft', scheduleExpression: '*/5 * * * *' });
    expect(draft.body.current_version).toMatchObject({ version: 2, status: 'draft', runs_by_default: false, next_run_at: null });
    expect(await ticks.getJobScheduler(id)).toMatchObject({ pattern: '* * * * *', template: { data: { workflowVersionId: v1.workflow_version_uuid } } });
    expect((await call(a)('POST', `/api/workflows/${id}/execute`)).body).toMatchObject({ version: 1 });
    const listed = (await call(a).as(versionList)('GET', `/api/workflows/${id}/versions`)).body.items as Record<string, unknown>[];
    expect(listed[0]).toMatchObject({ version: 1, runs_by_default: true });
    expect(listed[0]!.next_run_at).toEqual(expect.any(String));
    // An edit without a status is published.
    expect((await call(a).as(workflow)('PATCH', `/api/workflows/${id}`, { prompt: 'p3' })).body.current_version).toMatchObject({ version: 3, status: 'published' });
    expect((await call(a)('DELETE', `/api/workflows/${id}`)).status).toBe(204);
  });

  it('answers 404 for an unknown version to publish', async () => {
    const id = (await call(a).as(workflow)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'] })).body.workflow_uuid as string;
    const res = await call(a).as(errorBody)('POST', `/api/workflows/${id}/versions/nope/publish`);
    expect(res.status).toBe(404);
    expect(res.body.detail?.[0]?.loc).toEqual(['path', 'versionId']);
    expect((await call(a)('POST', `/api/workflows/nope/versions/nope/unpublish`)).status).toBe(404);
  });
});

describe('invalid triggers', () => {
  const base = { prompt: 'p', allowedDomains: ['a.test'], triggerType: 'schedule' };
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['too few fields', { scheduleExpression: '* * *' }, 'schedule_invalid', /5 fields .* or 6 .* has 3/],
    ['a value out of range', { scheduleExpression: '61 * * * *' }, 'schedule_invalid', /61/],
    ['letters', { scheduleExpression: 'every day' }, 'schedule_invalid', /fields|cron/],
    ['an unknown time zone', { scheduleExpression: 'TZ=Mars/Olympus 0 9 * * *' }, 'schedule_time_zone', /Mars\/Olympus/],
    ['a day that never comes', { scheduleExpression: '0 0 30 2 *' }, 'schedule_invalid', /cron/],
    ['more than once a minute', { scheduleExpression: '*/10 * * * * *' }, 'schedule_too_frequent', /6 times a minute.*60 s/],
    ['every second by macro', { scheduleExpression: '@secondly' }, 'schedule_too_frequent', /60 times a minute/],
    ['no expression', {}, 'missing', /required/],
    ['an expression on a manual version', { triggerType: 'manual', scheduleExpression: '0 9 * * *' }, 'schedule_unused', /triggerType "schedule"/],
  ];
  it.each(cases)('refuses %s with 422 at body.scheduleExpression', async (_, fields, type, msg) => {
    const before = (await call(strict).as(workflowList)('GET', '/api/workflows')).body.total as number;
    const res = await call(strict)('POST', '/api/workflows', { ...base, ...fields });
    expect(res.status).toBe(422);
    expectDetailShape(res.body);
    expect(res.body.detail).toEqual([{ loc: ['body', 'scheduleExpression'], msg: expect.stringMatching(msg), type }]);
    expect((await call(strict).as(workflowList)('GET', '/api/workflows')).body.total).toBe(before);
  });

  it('refuses the same on an edit, and keeps the version as it was', async () => {
    const id = (await call(strict).as(workflow)('POST', '/api/workflows', { ...base, scheduleExpression: '0 * * * * *' })).body.workflow_uuid as string;
    const res = await call(strict).as(errorBody)('PATCH', `/api/workflows/${id}`, { schedule_expression: '* * * * * *' });
    expect(res.status).toBe(422);
    expect(res.body.detail?.[0]).toMatchObject({ loc: ['body', 'scheduleExpression'], type: 'schedule_too_frequent' });
    expect((await call(strict).as(versionList)('GET', `/api/workflows/${id}/versions`)).body.total).toBe(1);
    expect((await call(strict)('DELETE', `/api/workflows/${id}`)).status).toBe(204);
  });

  it('refuses a bad status or trigger type, and a default input that fails the payload schema', async () => {
    const bad = await call(strict).as(errorBody)('POST', '/api/workflows', { ...base, scheduleExpression: '0 9 * * *', status: 'live', triggerType: 'cron' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail?.map((d) => d.loc)).toEqual(expect.arrayContaining([['body', 'status'], ['body', 'triggerType']]));
    const input = await call(strict).as(errorBody)('POST', '/api/workflows', { ...base, scheduleExpression: '0 9 * * *', payloadSchema, configuration: { inputPayload: { order: 5 } } });
    expect(input.status).toBe(422);
    expect(input.body.detail?.[0]?.loc).toEqual(['body', 'configuration', 'inputPayload', 'order']);
    // A scheduled version with a required input and no default input could never run.
    const none = await call(strict).as(errorBody)('POST', '/api/workflows', { ...base, scheduleExpression: '0 9 * * *', payloadSchema });
    expect(none.status).toBe(422);
    expect(none.body.detail?.[0]?.loc).toEqual(['body', 'configuration', 'inputPayload']);
  });
});

describe('the OpenAPI document', () => {
  it('describes the trigger fields and the publish routes', async () => {
    const doc = (await call(a)('GET', '/openapi.json')).body as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, { properties: Record<string, unknown> }> };
    };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/workflows/{id}/versions/{versionId}/publish', '/api/workflows/{id}/versions/{versionId}/unpublish']));
    const { WorkflowCreate, WorkflowUpdate, WorkflowVersion, Execution, Specification } = doc.components.schemas;
    for (const schema of [WorkflowCreate, WorkflowUpdate]) expect(Object.keys(schema?.properties ?? {})).toEqual(expect.arrayContaining(['status', 'triggerType', 'scheduleExpression', 'configuration']));
    expect(Object.keys(WorkflowVersion?.properties ?? {})).toEqual(expect.arrayContaining(['status', 'trigger_type', 'schedule_expression', 'configuration', 'next_run_at']));
    expect(Execution?.properties.trigger).toMatchObject({ enum: ['manual', 'schedule'] });
    expect(Object.keys(Specification?.properties ?? {})).not.toContain('triggerType');
  });
});
