import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRunnerDeps } from '../../src/compose.js';
import { runExecution } from '../../src/runner/run-execution.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { finish, memberBlock, startScriptedModelServer, turn, type RecordedRequest, type ScriptedTurn } from '../support/scripted-model-server.js';
import { useShopBrowser } from '../support/shop-browser.js';

/**
 * 100-turn executions on real Chromium through the whole runner (step screenshots, counters,
 * recording), against the scripted model server applying the API's rules: the prefix check on
 * preserved thinking and context management in its token count. The other models and spaces run
 * the same loop in long-runs.test.ts; `npm run bench -- tokens` has the figures.
 */

const TURNS = 100;
const logger = createSilentLogger();
const rig = useShopBrowser('long-run-chromium', { ANTHROPIC_MAX_RETRIES: '0', VIDEO_ENABLED: 'false' }, logger);

/** Looks without changing the page: screenshots, hovers and, with the browser toolset, page reads. */
function script(request: RecordedRequest, index: number): ScriptedTurn {
  if (index >= TURNS - 1) return finish('completed', { turns: TURNS });
  const tools = ((request.body as { tools?: Array<{ type?: string }> }).tools ?? []).map((t) => t.type);
  const x = 900 + (index % 5) * 20;
  if (tools.includes('browser_toolset_20260801')) {
    return turn(index % 3 === 2 ? memberBlock('get_page_text') : index % 3 === 1 ? memberBlock('screenshot') : memberBlock('hover', { target: { type: 'coordinate', x, y: 700 } }));
  }
  return turn(index % 4 === 3 ? memberBlock('mouse_move', { coordinate: [x, 700] }, 'computer') : memberBlock('screenshot', {}, 'computer'));
}

describe('a 100-turn execution on real Chromium', () => {
  it.each([
    ['claude-fable-5-2', 'computer'],
    ['claude-opus-5-5', 'browser'],
  ] as const)('completes on %s (%s use), every request accepted, the context bounded', async (model, toolset) => {
    const server = await startScriptedModelServer(script);
    try {
      const runConfig = { ...rig.config, ANTHROPIC_BASE_URL: server.url };
      const store = createLocalStore({ dir: rig.dir, prefix: '' });
      const deps = createRunnerDeps({ config: runConfig, logger, browser: rig.browser, store });
      const executionId = randomUUID();
      const summary = await runExecution(
        deps,
        { executionId, inputPayload: null, specification: { prompt: 'Look around the shop', allowedDomains: ['shop.test'], startUrl: `${rig.shop.origin}/`, model, toolset, maxSteps: TURNS } },
        new AbortController().signal,
      );
      expect(server.refusals).toEqual([]);
      expect(summary.status === 'skipped' ? summary : summary.document).toMatchObject({ status: 'completed', output: { turns: TURNS }, counters: { nSteps: TURNS } });
      const last = server.accounting[server.accounting.length - 1]!;
      expect(last.total).toBeLessThanOrEqual(60_000);
      // Step screenshots and the recording as before.
      const files = await readdir(path.join(rig.dir, 'executions', executionId));
      expect(files).toEqual(expect.arrayContaining(['recording.json', 'logs.jsonl', 'output.json', 'steps']));
    } finally {
      await server.stop();
    }
  });
});
