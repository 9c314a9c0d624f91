import { readdir } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';

/**
 * The API goes away at report time and the worker is restarted while the report is pending:
 * the report waits in the durable outbox (WORK_DIR/outbox), survives the restart, and is
 * delivered exactly once when the API is back.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('api', {
    // The model's last answer takes the API down: the final report finds nobody to take it.
    outage: () => {
      void rig.api.suspend();
      return finish('completed', { reported: 'later' });
    },
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('an API outage at report time', () => {
  it('keeps the report in the outbox across a worker restart and delivers it once when the API is back', async () => {
    const workDir = `${rig.tmp}/work`;
    const env = { WORKER_CONCURRENCY: '1', VIDEO_ENABLED: 'false' };
    const first = await rig.startWorker('before-restart', workDir, env);
    const executionId = await rig.enqueue('outage');

    // The client retries with backoff, the report stays on disk.
    await first.waitForLog((l) => l.msg === 'control-plane call failed; retrying' && l.path === `/api/executions/${executionId}/completed`);
    expect(await readdir(`${workDir}/outbox`)).toEqual([`${executionId}.completed.json`]);

    first.signal('SIGTERM');
    expect(await first.exited, first.tail()).toEqual({ code: 0, signal: null });
    expect(first.find('final reports left in the outbox for the next start')).toHaveLength(1);
    expect(first.find('final report delivered')).toHaveLength(0);
    expect(await readdir(`${workDir}/outbox`)).toEqual([`${executionId}.completed.json`]);
    expect(callsOf(rig.api, executionId).finals).toHaveLength(0);

    await rig.api.resume();
    const second = await rig.startWorker('after-restart', workDir, env);
    const report = await rig.api.waitForFinal(executionId);
    expect(report.path).toBe(`/api/executions/${executionId}/completed`);
    expect(report.body).toMatchObject({ nSteps: 1, nAgentActions: 0, nScreenshots: 1 });
    expect((report.body as { outputUrl: string }).outputUrl).toMatch(/output\.json$/);
    expect(report.serviceKey).toBe('fault-test-service-key');
    expect(second.find('delivering a final report left by an earlier run').map((l) => l.executionId)).toEqual([executionId]);
    await second.waitForLog((l) => l.msg === 'final report delivered' && l.executionId === executionId);
    // Removed from the outbox once delivered (the file goes before the log line).
    expect(await readdir(`${workDir}/outbox`)).toEqual([]);

    second.signal('SIGTERM');
    expect(await second.exited, second.tail()).toEqual({ code: 0, signal: null });
    // Exactly once, and the execution ran once.
    expect(onlyFinal(rig.api, executionId).kind).toBe('completed');
    expect(callsOf(rig.api, executionId).started).toHaveLength(1);
    expect(rig.requestsOf('outage')).toHaveLength(1);
  });
});
