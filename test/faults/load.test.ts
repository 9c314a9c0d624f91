import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { finish } from '../support/scripted-model-server.js';
import { callsOf, startRig, type FaultRig } from './harness.js';

/**
 * Load: 200 executions across 3 worker processes (4 at once each) with a fast scripted model
 * (one `finish` turn on the shop's first page). Every execution is started once and reported
 * once — 0 lost, 0 duplicated — and the throughput is printed. Video recording is off (VIDEO_ENABLED=false):
 * this measures the queue, browser and reporting path, not ffmpeg, on a 2-core machine.
 */

const EXECUTIONS = 200;
const WORKERS = 3;

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('load', {
    fast: () => finish('completed', { fast: true }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('load', () => {
  it(`runs ${EXECUTIONS} executions on ${WORKERS} workers with none lost and none run twice`, { timeout: 240_000 }, async () => {
    const env = { WORKER_CONCURRENCY: '4', VIDEO_ENABLED: 'false', LOG_LEVEL: 'info' };
    const workers = await Promise.all(Array.from({ length: WORKERS }, (_, i) => rig.startWorker(`load-${i + 1}`, `${rig.tmp}/work-${i + 1}`, env)));

    const ids = Array.from({ length: EXECUTIONS }, () => randomUUID());
    const startedAt = performance.now();
    await rig.queue.addBulk(ids.map((executionId) => ({ name: 'execute', data: { executionId, inputPayload: {}, specification: rig.spec('fast') }, opts: { jobId: executionId } })));
    const finals = await Promise.all(ids.map((id) => rig.api.waitForFinal(id)));
    const seconds = (performance.now() - startedAt) / 1000;

    const perWorker = workers.map((w) => w.find('execution completed').map((l) => l.executionId as string));
    console.log(
      `load: ${EXECUTIONS} executions on ${WORKERS} workers × 4 in ${seconds.toFixed(1)} s = ${(EXECUTIONS / seconds).toFixed(2)} executions/s ` +
        `(per worker: ${perWorker.map((ran) => ran.length).join(', ')}; video off)`,
    );

    expect(finals.every((call) => call.path.endsWith('/completed'))).toBe(true);
    // 0 lost, 0 duplicated: one started and one final report per execution, nothing else.
    for (const id of ids) {
      const { started, finals: reports } = callsOf(rig.api, id);
      expect(started, id).toHaveLength(1);
      expect(reports, id).toHaveLength(1);
    }
    expect(rig.api.calls.filter((c) => c.method === 'POST')).toHaveLength(2 * EXECUTIONS);
    // Each execution ran in exactly one worker.
    const ran = perWorker.flat();
    expect(ran).toHaveLength(EXECUTIONS);
    expect(new Set(ran).size).toBe(EXECUTIONS);
    expect(rig.requestsOf('fast')).toHaveLength(EXECUTIONS);
    for (const worker of workers) expect(worker.alive).toBe(true);
  });
});
