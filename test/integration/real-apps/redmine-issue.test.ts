/**
 * The browser toolset on an application nobody here wrote: Debian's Redmine (Rails, jQuery UI),
 * through the whole runner (real Chromium, the SDK against a scripted model that acts on what the
 * worker's own reads show). An issue is filed with a value in every field kind of the form, a
 * textile description with line breaks, an input file attached, and a watcher added through the
 * "Search for watchers to add" dialog; Redmine's REST API then says what was saved.
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
import { startInputFiles, type InputFiles } from '../../support/real-apps/input-files.js';
import { describeRun, issueAgent, issueWorkflow } from '../../support/real-apps/redmine-agent.js';
import { ATTACHMENTS, attachmentBytes, checkoutIssue } from '../../support/real-apps/redmine-inputs.js';
import { issueIds, issueRecord, recordFor } from '../../support/real-apps/redmine-record.js';
import { startRedmine, type Redmine } from '../../support/real-apps/redmine.js';
import { startScriptedModelServer } from '../../support/scripted-model-server.js';

const logger = createSilentLogger();

let redmine: Redmine;
let files: InputFiles;
let dir: string;
let config: Config;
let browser: BrowserSandbox;

beforeAll(async () => {
  [redmine, files, dir] = await Promise.all([startRedmine(), startInputFiles(ATTACHMENTS), tempDir('redmine-issue')]);
  config = loadConfig({
    ANTHROPIC_API_KEY: 'sk-test',
    ANTHROPIC_MAX_RETRIES: '0',
    BROWSER_HOST_RULES: `${redmine.hostRules},${files.hostRules}`,
    WORK_DIR: path.join(dir, 'work'),
    VIDEO_ENABLED: 'false',
    LOG_LEVEL: 'silent',
  });
  browser = createBrowser(config, logger);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await Promise.allSettled([redmine?.stop(), files?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Redmine, filed through the browser toolset', () => {
  it('saves an issue with every field kind, a textile description with its line breaks, the input file attached and a watcher from the search dialog', { timeout: 300_000 }, async () => {
    const input = checkoutIssue(files, redmine.facts.password);
    const agent = issueAgent(redmine, input);
    const model = await startScriptedModelServer(agent.script);
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' }) });
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowId: 'wf-redmine', workflowVersionId: 'v-1', inputPayload: input, specification: issueWorkflow(redmine, files.host) }, new AbortController().signal);
      if (summary.status === 'skipped') throw new Error('unexpected skip');
      expect(summary.document, describeRun(agent.log)).toMatchObject({ status: 'completed' });
      const id = (summary.document.output as { issue: string }).issue;
      expect(await issueIds(redmine)).toEqual([Number(id)]);
      expect(await issueRecord(redmine, id)).toEqual({ id: Number(id), ...recordFor(input, attachmentBytes('checkout-trace.txt')) });
      expect(files.fetched).toEqual(['checkout-trace.txt']);
      // The way the agent took: the new issue's form and the dialog, never the repair of a saved issue.
      const kinds = new Set(agent.log.turns.map((t) => t.kind));
      expect([...kinds].filter((k) => ['search', 'add watcher', 'create', 'report', 'edit the issue', 'open the watcher dialog'].includes(k))).toEqual(['search', 'add watcher', 'create', 'report']);
    } finally {
      await model.stop();
    }
  });

  it('puts right an issue saved with wrong values: another tracker and a box unticked through the edit form, the watcher through the issue\'s own dialog, the file attached', { timeout: 300_000 }, async () => {
    const input = { ...checkoutIssue(files, redmine.facts.password), tracker: 'Feature', subject: 'Refund button does nothing' };
    const { facts } = redmine;
    // As a replay could leave it: the default tracker, Billable not ticked, no watcher, no file.
    const { issue } = await redmine.post<{ issue: { id: number } }>('/issues.json', {
      issue: {
        project_id: facts.project.id,
        tracker_id: facts.trackers.Bug,
        subject: input.subject,
        description: input.description,
        priority_id: 3,
        custom_fields: [{ id: facts.customFields.Billable, value: '0' }],
      },
    });
    const agent = issueAgent(redmine, input);
    const model = await startScriptedModelServer(agent.script);
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' }) });
      const specification = { ...issueWorkflow(redmine, files.host), prompt: `Issue #${issue.id} was saved with some values other than the input's. Put it right: every value of the input, the input file attached, the watcher added. Report the issue number.`, startUrl: `${redmine.origin}/issues/${issue.id}` };
      const before = await issueIds(redmine);
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowId: 'wf-redmine-fix', workflowVersionId: 'v-1', inputPayload: input, specification }, new AbortController().signal);
      if (summary.status === 'skipped') throw new Error('unexpected skip');
      expect(summary.document, describeRun(agent.log)).toMatchObject({ status: 'completed', output: { issue: String(issue.id) } });
      expect(await issueIds(redmine)).toEqual(before);
      expect(await issueRecord(redmine, issue.id)).toEqual({ id: issue.id, ...recordFor(input, attachmentBytes('checkout-trace.txt')) });
      // The repair of a saved issue: the issue's own watcher dialog, then its edit form; no new issue.
      const kinds = new Set(agent.log.turns.map((t) => t.kind));
      expect([...kinds].filter((k) => ['open the watcher dialog', 'add watcher', 'edit the issue', 'submit', 'report', 'create'].includes(k))).toEqual(['open the watcher dialog', 'add watcher', 'edit the issue', 'submit', 'report']);
    } finally {
      await model.stop();
    }
  });
});
