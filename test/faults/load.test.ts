import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { finish } from '../support/scripted-model-server.js';
import { callsOf, startRig, type FaultRig } from './harness.js';

/**
 * Load: executions across several worker processes at once, each running several at a time,
 * with a fast scripted model (one `finish` turn on the shop's first page). Every execution is
 * started once and reported once, and ran in exactly one worker: 0 lost, 0 duplicated.
 *
 * What this proves does not depend on speed, so neither does the test: it is sized to take a
 * small fraction of its time limit on a loaded 2-core machine (about 20 s alone, where the
 * limit is 10 minutes). How many executions a second a worker runs is `npm run bench --
 * throughput`'s figure, not this test's. Video recording is off (VIDEO_ENABLED=false): the
 * queue, browser and reporting path are under test here, not ffmpeg.
 */

const EXECUTIONS = 60;
const WORKERS = 3;
const CONCURRENCY = 3;
/** Ample for a machine many times slower than the one the suite was sized on. */
const TIME_LIMIT_MS = 600_000;

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('load', {
    fast: () => finish('completed', { fast: true }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('load', () => {
  it(`runs ${EXECUTIONS} executions on ${WORKERS} workers × ${CONCURRENCY} with none lost and none run twice`, { timeout: TIME_LIMIT_MS }, async () => {
    const env = { WORKER_CONCURRENCY: String(CONCURRENCY), VIDEO_ENABLED: 'false', LOG_LEVEL: 'info' };
    const workers = await Promise.all(Array.from({ length: WORKERS }, (_, i) => rig.startWorker(`load-${i + 1}`, `${rig.tmp}/work-${i + 1}`, env)));

    const ids = Array.from({ length: EXECUTIONS }, () => randomUUID());
    await rig.queue.addBulk(ids.map((executionId) => ({ name: 'execute', data: { executionId, inputPayload: {}, specification: rig.spec('fast') }, opts: { jobId: executionId } })));
    const finals = await Promise.all(ids.map((id) => rig.api.waitForFinal(id)));
    const perWorker = workers.map((w) => w.find('execution completed').map((l) => l.executionId as string));

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
