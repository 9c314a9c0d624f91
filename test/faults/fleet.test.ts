import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { deferred } from '../support/deferred.js';
import { startRedis } from '../support/redis.js';
import { browserAndEncoderPids, enqueueMarked, fleetCase, stillAlive, tally } from './fleet.js';
import { pollUntil, startRig, type FaultRig } from './harness.js';

/**
 * A small fleet under faults (the suite's version of `npm run chaos`): two workers of concurrency
 * 2 on a Redis with an append-only file, eight executions. With four of them held in flight, one
 * worker is SIGKILLed and the other SIGTERMed, each replaced; Redis is restarted while the
 * replacements hold four more; then all are let go. Every execution is reported exactly once —
 * the killed worker's two `worker_lost`, the drained worker's two `worker_shutdown`, the rest
 * completed —, none asks the model anything after its report, and no Chromium or ffmpeg of the
 * stopped workers is left.
 */

let rig: FaultRig;
const gate = deferred();

beforeAll(async () => {
  rig = await startRig('fleet', { fleet: fleetCase(gate.promise) }, { redis: (dir) => startRedis({ appendOnlyDir: dir }) });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

const FLEET_ENV = { WORKER_CONCURRENCY: '2', QUEUE_LOCK_DURATION_MS: '15000', QUEUE_STALLED_INTERVAL_MS: '2000', SHUTDOWN_GRACE_MS: '1000' };

describe('a fleet with a killed worker, a drained worker and a Redis restart', () => {
  it('reports every execution exactly once and leaves no browser or encoder behind', async () => {
    const [a, b] = await Promise.all([rig.startWorker('a', `${rig.tmp}/work-a`, FLEET_ENV), rig.startWorker('b', `${rig.tmp}/work-b`, FLEET_ENV)]);
    const ids = await enqueueMarked(rig, 8);
    await rig.waitForRequest('fleet', 4); // both workers full, every run held at its first turn
    const recorded = new Map([...browserAndEncoderPids(a), ...browserAndEncoderPids(b)]);
    expect([...recorded.values()].some((name) => name === 'ffmpeg')).toBe(true);

    a.signal('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');
    const a2 = await rig.startWorker('a2', `${rig.tmp}/work-a`, FLEET_ENV);
    b.signal('SIGTERM');
    expect((await b.exited).code).toBe(0);
    const b2 = await rig.startWorker('b2', `${rig.tmp}/work-b`, FLEET_ENV);

    await rig.waitForRequest('fleet', 8); // the replacements hold the other four
    await rig.redis.restart!();
    gate.resolve();

    await Promise.all(ids.map((id) => rig.api.waitForFinal(id)));
    // A final report goes out before the job is closed in Redis: let each replacement finish its own.
    await pollUntil('the queue to be empty', async () => {
      const counts = await rig.queue.getJobCounts('waiting', 'active');
      return counts.waiting === 0 && counts.active === 0 ? counts : undefined;
    }, 60_000);
    const result = tally(rig, ids);
    expect(result).toEqual({ outcomes: { completed: 4, worker_lost: 2, worker_shutdown: 2 }, missing: [], reportedTwice: [], startedTwice: [], ranAfterEnd: [] });
    for (const worker of [a2, b2]) expect(worker.find('job lock lost: stopping the run')).toHaveLength(0);

    // Chromium notices its pipe closed and ffmpeg its input: both end after their worker.
    await pollUntil('no Chromium or ffmpeg of the stopped workers', () => (stillAlive(recorded).length === 0 ? true : undefined), 30_000);
  });
});
