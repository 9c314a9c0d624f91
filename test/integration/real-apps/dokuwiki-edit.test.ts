/**
 * The browser toolset on a second application nobody here wrote: Debian's DokuWiki (PHP), through
 * the whole runner (real Chromium, the SDK against a scripted model that acts on the worker's own
 * reads). A page is edited: signed in, its text replaced by one of several lines (a heading, a
 * list, a code block), a summary given, saved. The wiki's own files say what was saved, and by whom.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserSandbox } from '../../../src/browser/types.js';
import { createBrowser, createRunnerDeps } from '../../../src/compose.js';
import { loadConfig, type Config } from '../../../src/config/schema.js';
import { runExecution } from '../../../src/runner/run-execution.js';
import { createLocalStore } from '../../../src/storage/local-store.js';
import { createSilentLogger } from '../../../src/telemetry/logger.js';
import { tempDir } from '../../support/env.js';
import { startDokuWiki, type DokuWiki } from '../../support/real-apps/dokuwiki.js';
import { wikiAgent, wikiWorkflow, type WikiEdit } from '../../support/real-apps/wiki-agent.js';
import { startScriptedModelServer } from '../../support/scripted-model-server.js';

const logger = createSilentLogger();
const ALICE = { login: 'alice', password: 'wiki-Pa55word', name: 'Alice Smith' };
const BEFORE = '====== Payments runbook ======\n\nRestart the payments service.\n';

let wiki: DokuWiki;
let dir: string;
let config: Config;
let browser: BrowserSandbox;

beforeAll(async () => {
  [wiki, dir] = await Promise.all([startDokuWiki({ users: [ALICE], pages: { 'ops:runbook': BEFORE } }), tempDir('dokuwiki-edit')]);
  config = loadConfig({ ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_MAX_RETRIES: '0', BROWSER_HOST_RULES: wiki.hostRules, WORK_DIR: path.join(dir, 'work'), VIDEO_ENABLED: 'false', LOG_LEVEL: 'silent' });
  browser = createBrowser(config, logger);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await wiki?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('DokuWiki, edited through the browser toolset', () => {
  it('saves a page of several lines with its summary, signed in as the input user', { timeout: 300_000 }, async () => {
    const input: WikiEdit = {
      user: ALICE.login,
      password: ALICE.password,
      page: 'ops:runbook',
      text: '====== Payments runbook ======\n\n===== When checkout fails =====\n\n  - Check the EU card gateway: <code>payments-eu</code>\n  - Restart the payments service\n  - Tell the //on-call// lead\n\n<code bash>\nsystemctl restart payments\n</code>\n',
      summary: 'Steps for checkout failures',
    };
    const agent = wikiAgent(input);
    const model = await startScriptedModelServer(agent.script);
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' }) });
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowId: 'wf-wiki', workflowVersionId: 'v-1', inputPayload: input, specification: wikiWorkflow(wiki.origin, wiki.host, input.page) }, new AbortController().signal);
      if (summary.status === 'skipped') throw new Error('unexpected skip');
      expect(summary.document, `the agent's turns: ${agent.turns.join(' → ')}`).toMatchObject({ status: 'completed', output: { page: 'ops:runbook' } });
      // DokuWiki keeps the text as sent, line for line (it only ends it with one line break).
      expect((await wiki.page('ops:runbook'))?.trimEnd()).toBe(input.text.trimEnd());
      expect((await wiki.changes('ops:runbook')).at(-1)).toEqual({ type: 'E', user: 'alice', summary: input.summary });
      expect(agent.turns.filter((t) => !['read', 'wait for the page'].includes(t))).toEqual(['open the sign-in', 'sign in', 'open the editor', 'edit and save', 'report']);
    } finally {
      await model.stop();
    }
  });
});
