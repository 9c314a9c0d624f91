/**
 * The block editor's part of `npm run bench -- cache` (docs/run-cache.md#read-back-by-identity):
 * a post editor built on ProseMirror from npm (test/support/real-apps/block-editor.ts), through
 * the real runner, Redis and Chromium, the scripted model (block-editor-agent.ts) answering after
 * a model-like pause. Printed: the first run, a repeat whose input differs in every field (the
 * app has its sidebar panels open: their toggles are passed over), and a repeat whose panels
 * start closed. For each: model requests, input tokens by the scripted API's accounting, wall
 * time, and whether the server saved exactly the input.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createBrowser, createRunnerDeps } from '../src/compose.js';
import { loadConfig } from '../src/config/schema.js';
import { runExecution } from '../src/runner/run-execution.js';
import { createLocalStore } from '../src/storage/local-store.js';
import type { RunCacheStore } from '../src/run-cache/types.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { FIRST_POST as FIRST, postAgent, postWorkflow, SECOND_POST as SECOND, type PostInput } from '../test/support/real-apps/block-editor-agent.js';
import { startBlockEditor } from '../test/support/real-apps/block-editor.js';
import { delayed, startScriptedModelServer } from '../test/support/scripted-model-server.js';

const logger = createSilentLogger();


export async function benchBlockEditor(cache: RunCacheStore, latencyMs: number): Promise<Record<string, string>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-block-editor-'));
  const editor = await startBlockEditor();
  const config = loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: editor.hostRules, WORK_DIR: dir, LOG_LEVEL: 'silent', VIDEO_ENABLED: 'false' });
  const browser = createBrowser(config, logger);
  const figures: Record<string, string> = {};
  let firstTokens = 0;
  const runOnce = async (name: string, values: PostInput) => {
    const agent = postAgent(values);
    const model = await startScriptedModelServer((request) => {
      const answer = agent.script(request);
      return 'hang' in answer ? answer : delayed(answer, latencyMs);
    });
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir, prefix: '' }), runCache: cache });
      const before = editor.posts.length;
      const started = performance.now();
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowVersionId: 'block-editor-v1', inputPayload: values, specification: postWorkflow(editor.origin, editor.host) }, new AbortController().signal);
      const wallMs = Math.round(performance.now() - started);
      if (summary.status === 'skipped') throw new Error('skipped');
      const saved = editor.posts.slice(before);
      const exact = saved.length === 1 && JSON.stringify(saved[0]) === JSON.stringify({ title: values.title, paragraphs: values.paragraphs, categories: [values.category], tags: values.tags });
      const tokens = model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0);
      if (firstTokens === 0) firstTokens = tokens;
      figures[`block editor, ${name}: status / saved exactly the input`] = `${summary.document.status} / ${exact}`;
      figures[`block editor, ${name}: model requests, input tokens, wall ms`] = `${model.requests.length}, ${tokens}${tokens === firstTokens ? '' : ` (${(tokens / firstTokens).toFixed(3)}× the first run)`}, ${wallMs}`;
    } finally {
      await model.stop();
    }
  };
  try {
    await runOnce('first run', FIRST);
    await runOnce('repeat, new input, panels open', SECOND);
    editor.prefs.categories = false;
    editor.prefs.tags = false;
    await runOnce('repeat, panels closed', FIRST);
    return figures;
  } finally {
    await browser.close();
    await editor.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
