import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';

/**
 * A worker SIGKILLed mid-run, another one alive: the survivor reports the execution `failed`
 * with `worker_lost` (short lock and stalled check so this takes seconds, not a minute), and the
 * execution is never run again, not even when its job is delivered again.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('lost', {
    // Turn 1 acts, turn 2 never answers: the run is in flight when its worker dies.
    doomed: (turn) => (turn === 0 ? browser('left_click', { target: { type: 'coordinate', x: 100, y: 100 } }) : { hang: true }),
    later: () => finish('completed', { ok: true }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

const FAST_LOCKS = { QUEUE_LOCK_DURATION_MS: '5000', QUEUE_STALLED_INTERVAL_MS: '1000', WORKER_CONCURRENCY: '1', VIDEO_ENABLED: 'false' };

describe('a worker killed mid-run', () => {
  it('is reported worker_lost once by a surviving worker, and its execution never runs again', async () => {
    const doomedWorker = await rig.startWorker('doomed', `${rig.tmp}/work-a`, FAST_LOCKS);
    const executionId = await rig.enqueue('doomed');
    await rig.waitForRequest('doomed', 2); // the hanging turn: the run is in flight
    const survivor = await rig.startWorker('survivor', `${rig.tmp}/work-b`, FAST_LOCKS);

    doomedWorker.signal('SIGKILL');
    expect((await doomedWorker.exited).signal).toBe('SIGKILL');
    const modelRequestsAtKill = rig.model.requests.length;

    const report = await rig.api.waitForFinal(executionId);
    expect(report.path).toBe(`/api/executions/${executionId}/failed`);
    expect(report.body).toMatchObject({ error: { code: 'worker_lost' }, outputUrl: null, videoUrl: null, logsUrl: null });
    expect(report.serviceKey).toBe('fault-test-service-key');
    await survivor.waitForLog((l) => l.msg === 'final report delivered' && l.executionId === executionId);
    expect(survivor.find('execution lost: its worker stopped mid-run').map((l) => l.executionId)).toEqual([executionId]);

    // The queue agrees: the job failed as stalled, it is not waiting to be run again.
    const job = await rig.queue.getJob(executionId);
    expect(await job!.getState()).toBe('failed');
    expect(job!.failedReason).toMatch(/stalled/);
    // Its input left with the run: the job BullMQ keeps for days holds none.
    expect(job!.data).not.toHaveProperty('inputPayload');
    expect(job!.data.executionId).toBe(executionId);

    // Delivered again by a producer: not run again.
    await job!.remove();
    await rig.queue.add('execute', { executionId, inputPayload: {}, specification: rig.spec('doomed') }, { jobId: executionId });
    await survivor.waitForLog((l) => l.msg.includes('already ended') && l.executionId === executionId, 30_000);

    // The survivor still serves: a new execution completes on it.
    const later = await rig.enqueue('later');
    expect((await rig.api.waitForFinal(later)).path).toMatch(/\/completed$/);

    const { started } = callsOf(rig.api, executionId);
    expect(started).toHaveLength(1);
    expect(onlyFinal(rig.api, executionId).body).toMatchObject({ error: { code: 'worker_lost' } });
    // No model request for the lost execution after the kill.
    expect(rig.requestsOf('doomed')).toHaveLength(2);
    expect(rig.model.requests.length).toBe(modelRequestsAtKill + 1);
  });
});
