import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, freePort, httpGet, onlyFinal, pollUntil, startRig, type FaultRig } from './harness.js';

/**
 * redis-server restarted mid-run. The test Redis keeps nothing on disk, so the queue forgets
 * the running job: the run must still finish and be reported, the worker must reconnect and
 * take new work, and `/readyz` must say 503 while Redis is away and 200 once it is back.
 * Short locks make the run outlive several lock renewals after the restart.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('redis', {
    // A 10 s wait in the browser: Redis goes away and comes back during it.
    survivor: (turn) => (turn === 0 ? browser('wait', { duration: 10 }) : finish('completed', { survived: true })),
    after: () => finish('completed', { after: true }),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

const status = async (url: string) => (await httpGet(url)).status;

describe('a Redis restart mid-run', () => {
  it('does not stop the run; its report is delivered, the worker reconnects and serves, /readyz follows Redis', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const worker = await rig.startWorker('redis-worker', `${rig.tmp}/work`, {
      HEALTH_PORT: String(port),
      QUEUE_LOCK_DURATION_MS: '6000',
      QUEUE_STALLED_INTERVAL_MS: '2000',
      WORKER_CONCURRENCY: '1',
      VIDEO_ENABLED: 'false',
    });
    // Ready once Redis answers and a browser context opens (its first launch may take a while).
    await pollUntil('/readyz to answer 200 at start', async () => ((await status(`${base}/readyz`)) === 200 ? true : undefined), 30_000);
    expect(await status(`${base}/healthz`)).toBe(200);

    const survivor = await rig.enqueue('survivor');
    await rig.waitForRequest('survivor', 1);

    await rig.redis.stop();
    // Nothing tells us when the worker noticed: poll, bounded.
    await pollUntil('/readyz to answer 503', async () => ((await status(`${base}/readyz`)) === 503 ? true : undefined), 15_000);
    const readyBody = JSON.parse((await httpGet(`${base}/readyz`)).text) as { checks: Record<string, string> };
    expect(readyBody.checks.redis).not.toBe('ok');
    expect(readyBody.checks.browser).toBe('ok');
    expect(await status(`${base}/healthz`)).toBe(200);
    await rig.redis.restart!();
    await pollUntil('/readyz to answer 200', async () => ((await status(`${base}/readyz`)) === 200 ? true : undefined), 30_000);

    const report = await rig.api.waitForFinal(survivor);
    expect(report.path).toMatch(/\/completed$/);
    expect(report.body).toMatchObject({ nSteps: 2, nAgentActions: 1 });
    // The lock was renewed in vain against the new Redis: the run went on instead of stopping.
    expect(worker.find(/no longer knows this job/).map((l) => l.executionId)).toEqual([survivor]);
    expect(worker.find('job lock lost: stopping the run')).toHaveLength(0);

    // A job added after the restart is taken and run.
    const after = await rig.enqueue('after');
    expect((await rig.api.waitForFinal(after)).path).toMatch(/\/completed$/);
    for (const id of [survivor, after]) {
      expect(callsOf(rig.api, id).started).toHaveLength(1);
      expect(onlyFinal(rig.api, id).kind).toBe('completed');
    }
    expect(rig.requestsOf('survivor')).toHaveLength(2);

    // Prometheus text: executions by status and code, active executions, outbox depth.
    await worker.waitForLog((l) => l.msg === 'final report delivered' && l.executionId === after);
    // The report goes out before the job's slot is freed: poll the gauge (bounded) until it is.
    const metrics = await pollUntil('no active execution in /metrics', async () => {
      const { text } = await httpGet(`${base}/metrics`);
      return /^execution_worker_active_executions 0$/m.test(text) ? text : undefined;
    });
    expect(metrics).toMatch(/^execution_worker_executions_total\{status="completed",code=""\} 2$/m);
    expect(metrics).toMatch(/^execution_worker_active_executions 0$/m);
    expect(metrics).toMatch(/^execution_worker_outbox_depth 0$/m);
    expect(metrics).toMatch(/^# TYPE execution_worker_model_latency_seconds histogram$/m);
    expect(metrics).toMatch(/^execution_worker_execution_steps_count 2$/m);
  });
});
