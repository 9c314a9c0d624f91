import type { QueueEvents } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findTooDeep } from '../../src/contract/json-bounds.js';
import { stopAllDaemons } from '../support/daemon-process.js';
import { openQueueEvents } from '../support/queue-events.js';
import { finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';

/**
 * 100 malformed jobs, then a good one, on one worker process. A job whose execution id can be
 * read gets exactly one `failed` report with the contract's code and is never started; one
 * whose id cannot be read fails in the queue with the reason; the worker keeps serving. Among
 * them, specifications with schemas nested thousands of levels deep (docs/secrets.md#bounds).
 */

let rig: FaultRig;
let events: QueueEvents | undefined;

beforeAll(async () => {
  rig = await startRig('badinput', { good: () => finish('completed', { good: true }) });
});
afterEach(stopAllDaemons);
afterAll(async () => {
  await events?.close();
  await rig?.close();
});

type Expected = { readable: true; code: 'invalid_job' | 'invalid_specification' | 'invalid_input' } | { readable: false };
interface BadJob {
  data: unknown;
  expected: Expected;
}

const HUGE = 200_000;
/** Levels of a too-deep schema: past the bound and past structured clone's stack, within JSON.stringify's (the queue stores jobs as JSON). */
const DEEP = 4_000;
const PAYLOAD_SCHEMA = { type: 'object', required: ['user'], properties: { user: { type: 'string', maxLength: 10 } } };

/** A schema `levels` objects deep: arrays of arrays of … strings. */
function deepSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 1; i < levels; i++) schema = { type: 'array', items: schema };
  return schema;
}

function malformedJobs(spec: (extra?: Record<string, unknown>) => Record<string, unknown>): BadJob[] {
  const unreadable: Array<(i: number) => unknown> = [
    () => ({ workflowId: 'wf', inputPayload: {}, specification: spec() }),
    (i) => ({ executionId: 1000 + i, specification: spec() }),
    () => ({ executionId: 'x'.repeat(HUGE), specification: spec() }),
    (i) => (i % 2 ? { executionId: '   ' } : { executionId: null, workflowId: 'wf' }),
    (i) => (i % 2 ? 'just a string' : [randomUUID(), 'executionId']),
  ];
  const readable: Array<[Expected & { readable: true }, (i: number) => Record<string, unknown>]> = [
    [{ readable: true, code: 'invalid_job' }, () => ({ workflowId: 42, specification: spec() })],
    [{ readable: true, code: 'invalid_job' }, (i) => ({ specification: i % 2 ? 'not an object' : [1, 2, 3] })],
    [{ readable: true, code: 'invalid_job' }, () => ({ workflowId: '', inputPayload: 'y'.repeat(HUGE), specification: spec() })],
    [
      { readable: true, code: 'invalid_specification' },
      (i) =>
        ({
          specification: [
            { prompt: '', allowedDomains: ['shop.test'] },
            { prompt: 'x', allowedDomains: [] },
            spec({ startUrl: 'http://elsewhere.test/' }),
            { prompt: 'p'.repeat(HUGE), allowedDomains: 'shop.test' },
            spec({ payloadSchema: { type: 'no-such-type' } }),
            spec({ maxSteps: -1 }),
            // Past the depth bound, and deeper than structured clone can copy to the schema thread.
            spec({ outputSchema: { type: 'object', properties: { x: deepSchema(DEEP) } } }),
            spec({ payloadSchema: deepSchema(DEEP) }),
          ][i % 8],
        }) as Record<string, unknown>,
    ],
    [
      { readable: true, code: 'invalid_input' },
      (i) => ({ specification: spec({ payloadSchema: PAYLOAD_SCHEMA }), inputPayload: [{}, { user: 5 }, { user: 'u'.repeat(HUGE) }, 'not an object', null][i % 5] }),
    ],
  ];
  const jobs: BadJob[] = [];
  for (let i = 0; i < 8; i++) for (const make of unreadable) jobs.push({ data: make(i), expected: { readable: false } });
  for (let i = 0; i < 12; i++) for (const [expected, make] of readable) jobs.push({ data: { executionId: randomUUID(), inputPayload: {}, ...make(i) }, expected });
  return jobs;
}

describe('malformed jobs', () => {
  it('fail with the contract’s codes, one report each when the id is readable, and the worker keeps serving', async () => {
    const worker = await rig.startWorker('bad-input', `${rig.tmp}/work`, { WORKER_CONCURRENCY: '4', VIDEO_ENABLED: 'false' });
    events = await openQueueEvents(rig.queue, rig.redis.url);
    // One completion listener per awaited job.
    events.setMaxListeners(250);
    rig.queue.setMaxListeners(250);

    const bad = malformedJobs((extra = {}) => rig.spec('bad', extra));
    expect(bad).toHaveLength(100);
    const added = await rig.queue.addBulk(
      bad.map((job) => {
        const id = (job.data as { executionId?: unknown } | null)?.executionId;
        // The producer's convention (jobId = execution id) where there is a usable id.
        return { name: 'execute', data: job.data, ...(job.expected.readable ? { opts: { jobId: id as string } } : {}) };
      }),
    );
    const good = await rig.enqueue('good');

    const outcomes = await Promise.allSettled(added.map((job) => job.waitUntilFinished(events!, 60_000)));
    expect((await rig.api.waitForFinal(good)).path).toMatch(/\/completed$/);

    let deepSeen = 0;
    bad.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (!job.expected.readable) {
        // Failed in the queue with the reason; nobody to report to.
        expect(outcome.status, `job ${i}`).toBe('rejected');
        expect(String((outcome as PromiseRejectedResult).reason), `job ${i}`).toMatch(/invalid job data/);
        return;
      }
      const executionId = (job.data as { executionId: string }).executionId;
      expect(outcome, `job ${i}`).toMatchObject({ status: 'fulfilled', value: { status: 'failed', code: job.expected.code } });
      const final = onlyFinal(rig.api, executionId);
      expect(final.kind, `job ${i}`).toBe('failed');
      expect(final.body, `job ${i}`).toMatchObject({ error: { code: job.expected.code }, nSteps: 0, videoUrl: null, durationMs: 0 });
      expect(callsOf(rig.api, executionId).started, `job ${i}`).toHaveLength(0);
      const schemas = (job.data as { specification?: { outputSchema?: unknown; payloadSchema?: unknown } }).specification;
      if (job.expected.code === 'invalid_specification' && (schemas?.outputSchema ?? schemas?.payloadSchema) && findTooDeep(schemas)) {
        deepSeen += 1;
        expect((final.body as { error: { message: string } }).error.message, `job ${i}`).toMatch(/(outputSchema|payloadSchema)\.\S+: it nests deeper than 64 levels of objects and arrays/);
      }
    });
    expect(deepSeen).toBe(2);

    // The API heard of nothing else: 60 failures, and the good one's started and completed.
    const readable = bad.filter((j) => j.expected.readable).length;
    expect(readable).toBe(60);
    expect(rig.api.calls.filter((c) => c.method === 'POST')).toHaveLength(readable + 2);
    expect(callsOf(rig.api, good).started).toHaveLength(1);
    expect(onlyFinal(rig.api, good).kind).toBe('completed');
    // No browser, no model for any bad job; the process is still up.
    expect(rig.model.requests).toHaveLength(1);
    expect(worker.alive).toBe(true);
    expect(worker.find(/queue worker stopped/)).toHaveLength(0);
  });
});
