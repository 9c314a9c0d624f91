import { randomUUID } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { runExecution } from '../../src/runner/run-execution.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { hostRules, tempDir } from '../support/env.js';
import { finish, memberBlock, startScriptedModelServer, turn, type RecordedRequest, type ScriptedTurn } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * 100-turn executions on real Chromium through the whole runner (step screenshots, counters,
 * recording), against the scripted model server applying the API's rules: the prefix check on
 * preserved thinking and context management in its token count. The other models and spaces run
 * the same loop in long-runs.test.ts; `npm run bench -- tokens` has the figures.
 */

const TURNS = 100;
let shop: ShopServer;
let dir: string;
let config: Config;
let browser: BrowserSandbox;
const logger = createSilentLogger();

beforeAll(async () => {
  [shop, dir] = await Promise.all([startShopServer(), tempDir('long-run-chromium')]);
  config = loadConfig({ BROWSER_HOST_RULES: hostRules('shop.test'), WORK_DIR: dir, ANTHROPIC_API_KEY: 'k', ANTHROPIC_MAX_RETRIES: '0', VIDEO_ENABLED: 'false' });
  browser = createBrowser(config, logger);
});

afterAll(async () => {
  await browser?.close();
  await shop?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

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
      const runConfig = { ...config, ANTHROPIC_BASE_URL: server.url };
      const store = createLocalStore({ dir, prefix: '' });
      const deps = createRunnerDeps({ config: runConfig, logger, browser, store });
      const executionId = randomUUID();
      const summary = await runExecution(
        deps,
        { executionId, inputPayload: null, specification: { prompt: 'Look around the shop', allowedDomains: ['shop.test'], startUrl: `${shop.origin}/`, model, toolset, maxSteps: TURNS } },
        new AbortController().signal,
      );
      expect(server.refusals).toEqual([]);
      expect(summary.status === 'skipped' ? summary : summary.document).toMatchObject({ status: 'completed', output: { turns: TURNS }, counters: { nSteps: TURNS } });
      const last = server.accounting[server.accounting.length - 1]!;
      expect(last.total).toBeLessThanOrEqual(60_000);
      // Step screenshots and the recording as before.
      const files = await readdir(path.join(dir, 'executions', executionId));
      expect(files).toEqual(expect.arrayContaining(['recording.json', 'logs.jsonl', 'output.json', 'steps']));
    } finally {
      await server.stop();
    }
  });
});
