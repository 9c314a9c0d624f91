import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { deferred } from '../support/deferred.js';
import { finish } from '../support/scripted-model-server.js';
import { callsOf, freePort, httpGet, onlyFinal, pollUntil, startRig, type FaultRig } from './harness.js';

/**
 * Admission by capacity: a worker of concurrency 2 whose memory limit leaves no room for a second
 * execution runs one at a time. The second job waits in the queue (not in the worker) while the
 * first runs, whatever the machine's speed: the first is held by its model turn until the test
 * has seen the second waiting, and the gauge KEDA can read says the worker has no free slot.
 */

let rig: FaultRig;
const release = deferred();

beforeAll(async () => {
  rig = await startRig('admission', {
    first: () => ({ ...finish('completed', { first: true }), until: release.promise }),
    second: () => finish('completed', { second: true }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('a worker whose memory has room for one execution', () => {
  it('leaves the second job waiting until the first ends, then runs it; /metrics shows no free slot meanwhile', async () => {
    const port = await freePort();
    const worker = await rig.startWorker('tight', `${rig.tmp}/work`, { WORKER_CONCURRENCY: '2', WORKER_MAX_MEMORY_MB: '1', HEALTH_PORT: String(port), VIDEO_ENABLED: 'false' });
    const metrics = async () => (await httpGet(`http://127.0.0.1:${port}/metrics`)).text;
    expect(await metrics()).toMatch(/^execution_worker_free_slots 1$/m); // idle: always one
    expect(await metrics()).toMatch(/^execution_worker_memory_bytes [1-9]\d*$/m);

    const first = await rig.enqueue('first');
    await rig.waitForRequest('first', 1); // held here until released
    await worker.waitForLog('no room for more executions: taking none until there is');
    const second = await rig.enqueue('second');
    // Waiting in the queue, not taken (or handed back at once if it was fetched in between).
    await pollUntil('the second job waiting', async () => ((await rig.queue.getJob(second))?.getState().then((s) => (s === 'waiting' ? s : undefined))), 30_000);
    const during = await metrics();
    expect(during).toMatch(/^execution_worker_active_executions 1$/m);
    expect(during).toMatch(/^execution_worker_free_slots 0$/m);
    expect(rig.requestsOf('second')).toHaveLength(0);
    expect(callsOf(rig.api, second).started).toHaveLength(0);

    release.resolve();
    expect((await rig.api.waitForFinal(first)).path).toMatch(/\/completed$/);
    expect((await rig.api.waitForFinal(second)).path).toMatch(/\/completed$/);
    // One after the other: the second started only after the first was reported.
    const order = rig.api.calls.map((c) => c.path);
    expect(order.indexOf(`/api/executions/${second}/started`)).toBeGreaterThan(order.indexOf(`/api/executions/${first}/completed`));
    for (const id of [first, second]) {
      expect(callsOf(rig.api, id).started).toHaveLength(1);
      expect(onlyFinal(rig.api, id).kind).toBe('completed');
    }
  });
});
