import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { commandLine, stopAllDaemons } from '../support/daemon-process.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, pollUntil, startRig, type FaultRig } from './harness.js';

/**
 * Chromium SIGKILLed under a running execution (found through /proc among the worker's
 * descendants): that run fails with `browser_error`; the next run on the same worker gets a
 * new, working browser.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('chromium', {
    crash: (turn) => (turn === 0 ? browser('left_click', { target: { type: 'coordinate', x: 100, y: 100 } }) : { hang: true }),
    next: (turn) => (turn === 0 ? browser('left_click', { target: { type: 'coordinate', x: 250, y: 120 } }) : finish('completed', { fine: true })),
  });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

const isChromium = (pid: number) => /chrom/i.test(commandLine(pid).split(' ')[0] ?? '');

describe('Chromium killed mid-run', () => {
  it('fails that run with browser_error and serves the next one with a new browser', async () => {
    const worker = await rig.startWorker('crashy', `${rig.tmp}/work`, { WORKER_CONCURRENCY: '1' });
    const crash = await rig.enqueue('crash');
    await rig.waitForRequest('crash', 2); // the hanging turn: Chromium is up and the run in flight

    const chromium = worker.descendants().filter(isChromium);
    expect(chromium.length).toBeGreaterThan(0);
    for (const pid of chromium) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // a child already gone with its parent
      }
    }

    const report = await rig.api.waitForFinal(crash);
    expect(report.path).toMatch(/\/failed$/);
    expect(report.body).toMatchObject({ error: { code: 'browser_error' }, nSteps: 1, nAgentActions: 1 });
    // What was recorded is still uploaded.
    expect((report.body as { logsUrl: unknown }).logsUrl).toMatch(/logs\.jsonl$/);

    const next = await rig.enqueue('next');
    const nextReport = await rig.api.waitForFinal(next);
    expect(nextReport.path).toMatch(/\/completed$/);
    expect(nextReport.body).toMatchObject({ nSteps: 2, nAgentActions: 1 });
    expect((nextReport.body as { videoUrl: unknown }).videoUrl).toMatch(/video\.mp4$/);
    // A new Chromium, not one of the killed ones.
    const now = await pollUntil('a live Chromium under the worker', () => {
      const found = worker.descendants().filter(isChromium);
      return found.length > 0 ? found : undefined;
    });
    expect(now.some((pid) => chromium.includes(pid))).toBe(false);

    expect(worker.alive).toBe(true);
    for (const id of [crash, next]) {
      expect(callsOf(rig.api, id).started).toHaveLength(1);
      onlyFinal(rig.api, id);
    }
  });
});
