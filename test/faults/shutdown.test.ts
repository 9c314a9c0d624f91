import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { computer, finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';

/**
 * SIGTERM with runs in flight (contract §8): no new job is taken; a run that ends within
 * SHUTDOWN_GRACE_MS is reported as it ended; one that does not is stopped, its recording
 * finalised and uploaded, and reported `worker_shutdown`; the process exits 0. A second signal
 * cuts the grace short.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('shutdown', {
    // Still working (a 2 s wait in the browser) when SIGTERM comes, done well within the grace.
    short: (turn) => (turn === 0 ? computer('wait', { duration: 2 }) : finish('completed', { done: 'short' })),
    long: () => ({ hang: true }),
    endless: () => ({ hang: true }),
    late: () => finish('completed', { done: 'late' }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('graceful shutdown', () => {
  it('lets a short run finish, stops a long one with worker_shutdown and its artifacts, and exits 0', async () => {
    const worker = await rig.startWorker('draining', `${rig.tmp}/work-a`, { SHUTDOWN_GRACE_MS: '8000', WORKER_CONCURRENCY: '2' });
    const short = await rig.enqueue('short');
    const long = await rig.enqueue('long');
    await Promise.all([rig.waitForRequest('short'), rig.waitForRequest('long')]);

    worker.signal('SIGTERM');
    await worker.waitForLog('daemon draining');
    // Taken by nobody while this worker drains.
    const late = await rig.enqueue('late');

    const [shortReport, longReport] = await Promise.all([rig.api.waitForFinal(short), rig.api.waitForFinal(long)]);
    expect(shortReport.path).toMatch(/\/completed$/);
    expect(shortReport.body).toMatchObject({ nSteps: 2, nAgentActions: 1 });
    expect(longReport.path).toMatch(/\/failed$/);
    const longBody = longReport.body as Record<string, unknown>;
    expect(longBody).toMatchObject({ error: { code: 'worker_shutdown' } });
    for (const field of ['videoUrl', 'logsUrl', 'outputUrl'] as const) {
      expect(longBody[field], field).toMatch(/^file:\/\//);
      expect((await stat(fileURLToPath(longBody[field] as string))).size, field).toBeGreaterThan(0);
    }
    expect(longBody.durationMs).toBeGreaterThan(0);

    expect(await worker.exited).toEqual({ code: 0, signal: null });
    const states = worker.logs.filter((l) => typeof l.to === 'string' && /^daemon /.test(l.msg)).map((l) => l.to);
    expect(states).toEqual(['starting', 'running', 'draining', 'stopped']);
    expect(worker.find('grace period over: stopping running executions')).toHaveLength(1);

    for (const id of [short, long]) {
      expect(callsOf(rig.api, id).started).toHaveLength(1);
      onlyFinal(rig.api, id);
    }
    expect(callsOf(rig.api, late).started).toHaveLength(0);
    expect(await (await rig.queue.getJob(late))!.getState()).toBe('waiting');
    expect(rig.requestsOf('late')).toHaveLength(0);
    await (await rig.queue.getJob(late))!.remove();
  });

  it('cuts the grace short on a second signal', async () => {
    // A grace far beyond the test's timeout: only the second signal can end this in time.
    const worker = await rig.startWorker('impatient', `${rig.tmp}/work-b`, { SHUTDOWN_GRACE_MS: '3600000', WORKER_CONCURRENCY: '1', VIDEO_ENABLED: 'false' });
    const endless = await rig.enqueue('endless');
    await rig.waitForRequest('endless');

    worker.signal('SIGTERM');
    await worker.waitForLog('taking no new job; waiting for running executions');
    worker.signal('SIGTERM');
    await worker.waitForLog('second stop request: cutting the grace period short');

    const report = await rig.api.waitForFinal(endless);
    expect(report.path).toMatch(/\/failed$/);
    expect(report.body).toMatchObject({ error: { code: 'worker_shutdown' } });
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    expect(worker.find('daemon stopped')).toHaveLength(1);
    expect(callsOf(rig.api, endless).started).toHaveLength(1);
    onlyFinal(rig.api, endless);
  });
});
