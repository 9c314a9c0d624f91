import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRecorder, createRunnerDeps } from '../../src/compose.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { browser as member, endTurn, failure, finish, startScriptedModelServer, type Script, type ScriptedTurn } from '../support/scripted-model-server.js';
import { useShopBrowser } from '../support/shop-browser.js';

/**
 * How runs end badly, on real Chromium and ffmpeg, with the real SDK against a scripted
 * model: each failure gets its contract code, counters, and the artifacts made so far.
 */

const logger = createSilentLogger();
const rig = useShopBrowser('runner-failures', { ANTHROPIC_MAX_RETRIES: '1', VIDEO_FPS: '5' }, logger);

async function run(script: Script, specExtra: Record<string, unknown> = {}, signal = new AbortController().signal, configExtra: Partial<typeof rig.config> = {}): Promise<ExecutionSummary & { status: 'completed' | 'failed' }> {
  const model = await startScriptedModelServer(script);
  const runConfig = { ...rig.config, ...configExtra, ANTHROPIC_BASE_URL: model.url };
  const recorder = createRecorder(runConfig, logger);
  try {
    const store = createLocalStore({ dir: rig.dir, prefix: '' });
    const deps = createRunnerDeps({ config: runConfig, logger, browser: rig.browser, store, ...(recorder ? { recorder } : {}) });
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: null, specification: { prompt: 'Look at the shop', allowedDomains: [new URL(rig.shop.origin).host], startUrl: `${rig.shop.origin}/`, ...specExtra } }, signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    return summary;
  } finally {
    // A shared encoder (VIDEO_ENCODER=shared) is ended with its recorder.
    await Promise.all([model.stop(), recorder?.close?.()]);
  }
}

const click = () => member('left_click', { target: { type: 'coordinate', x: 640, y: 400 } });

describe('runs that end badly', () => {
  it('stops at maxSteps with max_steps', async () => {
    const s = await run([click(), click(), click()], { maxSteps: 2 });
    expect(s.document).toMatchObject({ status: 'failed', error: { code: 'max_steps' }, counters: { nSteps: 2, nAgentActions: 2, nScreenshots: 1 } });
  });

  it('stops at the deadline with timeout and still keeps the video and logs', async () => {
    const s = await run([click(), { hang: true } as ScriptedTurn], { timeoutMs: 3_000 });
    expect(s.document).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    // However busy the machine, the run never got past the hanging second turn.
    expect(s.document.counters.nSteps).toBeLessThanOrEqual(1);
    expect(s.urls.videoUrl).toMatch(/^file:/);
    expect(existsSync(fileURLToPath(s.urls.videoUrl!))).toBe(true);
    expect(existsSync(fileURLToPath(s.urls.logsUrl!))).toBe(true);
  });

  it('ends with resource_limit once its scratch folder holds more than SCRATCH_DISK_MAX_BYTES, and says so in its logs', async () => {
    // Its screenshots, video and logs pass 20 kB at the first steps; a run never stopped would
    // finish `completed` after 40 waits.
    const waits: ScriptedTurn[] = [...Array.from({ length: 40 }, () => member('wait', { duration: 1 })), finish('completed', 'never stopped')];
    const s = await run(waits, {}, undefined, { SCRATCH_DISK_MAX_BYTES: 20_000 });
    expect(s.document).toMatchObject({ status: 'failed', error: { code: 'resource_limit', message: expect.stringContaining('SCRATCH_DISK_MAX_BYTES') } });
    const lines = readFileSync(fileURLToPath(s.urls.logsUrl!), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.type === 'resource_limit_reached')).toMatchObject([{ limit: 'SCRATCH_DISK_MAX_BYTES', max: 20_000, unit: 'bytes', action: 'ended' }]);
  });

  it('turns persistent model 500s into model_error after retries', async () => {
    const s = await run([failure(500), failure(500), failure(500)]);
    expect(s.document).toMatchObject({ status: 'failed', error: { code: 'model_error' }, counters: { nSteps: 0 } });
  });

  it('retries a passing model 529 and goes on', async () => {
    const s = await run([failure(529, { headers: { 'retry-after': '0' } }), finish('completed', 'ok')]);
    expect(s.document).toMatchObject({ status: 'completed', output: 'ok' });
  });

  it('reports the agent giving up as agent_failed with its reason', async () => {
    const s = await run([finish('failed', undefined, 'the order form is missing')]);
    expect(s.document.error).toEqual({ code: 'agent_failed', message: 'the order form is missing' });
  });

  it('fails two end_turns without finish with agent_failed', async () => {
    const s = await run([endTurn('done'), endTurn('done, really')]);
    expect(s.document).toMatchObject({ error: { code: 'agent_failed' }, counters: { nSteps: 2 } });
  });

  it('rejects a start URL outside the allow-list as invalid_specification, before the browser', async () => {
    const s = await run([finish('completed')], { startUrl: 'http://evil.test/' });
    expect(s.document).toMatchObject({ error: { code: 'invalid_specification' }, counters: { nSteps: 0, nScreenshots: 0, durationMs: 0 } });
    expect(s.urls.videoUrl).toBeNull();
  });

  it('stops with worker_shutdown when the worker aborts it', async () => {
    const controller = new AbortController();
    const { ExecutionError } = await import('../../src/contract/errors.js');
    // The second model call hangs; the shutdown arrives while it does.
    const s = await run(
      (_request, index) => {
        if (index === 0) return click();
        controller.abort(new ExecutionError('worker_shutdown', 'shutting down'));
        return { hang: true } as ScriptedTurn;
      },
      {},
      controller.signal,
    );
    expect(s.document).toMatchObject({ error: { code: 'worker_shutdown' } });
  });
});
