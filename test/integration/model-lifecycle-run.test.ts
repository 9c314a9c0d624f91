/**
 * A run's model as the SDK's table has it (docs/model.md#retired-and-deprecated-models), through
 * the runner on real Chromium with the SDK against the scripted API: a retired model (Sonnet 4.5,
 * retired 2026-11-30) is refused before the run, naming its retirement, with no request sent; a
 * deprecated one (Opus 4.5, end of life 2027-01-22) runs, and its end of life is in logs.jsonl.
 * The clock is fixed (2026-12-01) so that the dates hold whenever the suite runs.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { actionSpaceChooser, createRecorder, createRunnerDeps } from '../../src/compose.js';
import { runExecution } from '../../src/runner/run-execution.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { finish, startScriptedModelServer } from '../support/scripted-model-server.js';
import { useShopBrowser } from '../support/shop-browser.js';

const logger = createSilentLogger();
const rig = useShopBrowser('model-lifecycle-run', { ANTHROPIC_MAX_RETRIES: '0', VIDEO_ENABLED: 'false' }, logger);
const NOW = Date.parse('2026-12-01T12:00:00Z');

async function run(model: string) {
  const api = await startScriptedModelServer([finish('completed', 'looked')]);
  const config = { ...rig.config, ANTHROPIC_BASE_URL: api.url };
  const recorder = createRecorder(config, logger);
  try {
    const store = createLocalStore({ dir: rig.dir, prefix: '' });
    const deps = { ...createRunnerDeps({ config, logger, browser: rig.browser, store, ...(recorder ? { recorder } : {}) }), chooseActionSpace: actionSpaceChooser(() => NOW) };
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: null, specification: { prompt: 'Look at the shop', model, allowedDomains: [new URL(rig.shop.origin).host], startUrl: `${rig.shop.origin}/` } }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const logs = summary.urls.logsUrl ? (await readFile(fileURLToPath(summary.urls.logsUrl), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : [];
    return { summary, logs, requests: api.requests.filter((r) => r.url.startsWith('/v1/messages')).length };
  } finally {
    await Promise.all([api.stop(), recorder?.close?.()]);
  }
}

describe('a run of a retired or deprecated model', () => {
  it('refuses a retired model before the run, naming its retirement, and sends it nothing', async () => {
    const { summary, requests } = await run('claude-sonnet-4-5-20250929');
    expect(summary.document).toMatchObject({ status: 'failed', error: { code: 'invalid_specification' }, counters: { nSteps: 0, nScreenshots: 0 } });
    expect(summary.document.error?.message).toMatch(/claude-sonnet-4-5-20250929 was retired on 2026-11-30/);
    expect(requests).toBe(0);
  });

  it('runs a deprecated model and logs its end of life', async () => {
    const { summary, logs, requests } = await run('claude-opus-4-5');
    expect(summary.document).toMatchObject({ status: 'completed', output: 'looked' });
    expect(requests).toBe(1);
    expect(logs.filter((l) => l.type === 'model_deprecated')).toEqual([expect.objectContaining({ model: 'claude-opus-4-5', endOfLife: '2027-01-22' })]);
  });
});
