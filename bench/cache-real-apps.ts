/**
 * The real applications' part of `npm run bench -- cache` (docs/run-cache.md#sources): Debian's
 * Redmine (test/support/real-apps/redmine.ts; skipped, and said so, where it is not installed)
 * and, for computer use, the ledger form driven by coordinates (test/support/ledger-app.ts),
 * through the real runner, Redis and Chromium, the scripted models answering after a model-like
 * pause. Printed for each: the first run and a repeat with an input that differs in every field
 * — model requests, input tokens by the scripted API's accounting, wall time — and whether the
 * application saved exactly the input.
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
import { FIRST_ENTRY, SECOND_ENTRY, ledgerAgent, ledgerRecord, ledgerWorkflow, startLedgerApp } from '../test/support/ledger-app.js';
import { startInputFiles } from '../test/support/real-apps/input-files.js';
import { attachmentName, issueAgent, issueWorkflow, type IssueInput } from '../test/support/real-apps/redmine-agent.js';
import { ATTACHMENTS, attachmentBytes, checkoutIssue, everyFieldNew } from '../test/support/real-apps/redmine-inputs.js';
import { issueIds, issueRecord, recordFor } from '../test/support/real-apps/redmine-record.js';
import { redmineMissing, startRedmine } from '../test/support/real-apps/redmine.js';
import { delayed, startScriptedModelServer, type RecordedRequest, type ScriptedTurn } from '../test/support/scripted-model-server.js';

const logger = createSilentLogger();

interface Once {
  status: string;
  exact: boolean;
  requests: number;
  tokens: number;
  wallMs: number;
  cache: string;
}

/** One execution through the runner with a scripted model that answers after `latencyMs`. */
async function runOnce(options: { cache: RunCacheStore; hostRules: string; dir: string; latencyMs: number; versionId: string; input: unknown; specification: Record<string, unknown>; script: (request: RecordedRequest) => ScriptedTurn; saved: () => Promise<boolean> }, browser: ReturnType<typeof createBrowser>): Promise<Once> {
  const config = loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: options.hostRules, WORK_DIR: options.dir, LOG_LEVEL: 'silent', VIDEO_ENABLED: 'false' });
  const model = await startScriptedModelServer((request) => {
    const answer = options.script(request);
    return 'hang' in answer ? answer : delayed(answer, options.latencyMs);
  });
  try {
    const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir: options.dir, prefix: '' }), runCache: options.cache });
    const started = performance.now();
    const summary = await runExecution(deps, { executionId: randomUUID(), workflowVersionId: options.versionId, inputPayload: options.input, specification: options.specification }, new AbortController().signal);
    const wallMs = Math.round(performance.now() - started);
    if (summary.status === 'skipped') throw new Error('skipped');
    return { status: summary.document.status, exact: await options.saved(), requests: model.requests.length, tokens: model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0), wallMs, cache: JSON.stringify(summary.document.cache) };
  } finally {
    await model.stop();
  }
}

function show(figures: Record<string, string>, app: string, name: string, r: Once, first?: Once): void {
  figures[`${app}, ${name}: status / saved exactly the input`] = `${r.status} / ${r.exact}`;
  if (first) figures[`${app}, ${name}: cache`] = r.cache;
  figures[`${app}, ${name}: model requests, input tokens, wall ms`] = `${r.requests}, ${r.tokens}${first ? ` (${(r.tokens / first.tokens).toFixed(3)}× the first run)` : ''}, ${r.wallMs}`;
}

export async function benchRealApps(cache: RunCacheStore, latencyMs: number): Promise<Record<string, string>> {
  const figures: Record<string, string> = {};
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-real-apps-'));
  try {
    const missing = redmineMissing();
    if (missing) figures['redmine'] = `not run: ${missing}`;
    else Object.assign(figures, await benchRedmine(cache, latencyMs, dir));
    Object.assign(figures, await benchLedger(cache, latencyMs, dir));
    return figures;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function benchRedmine(cache: RunCacheStore, latencyMs: number, dir: string): Promise<Record<string, string>> {
  const [redmine, files] = await Promise.all([startRedmine(), startInputFiles(ATTACHMENTS)]);
  const hostRules = `${redmine.hostRules},${files.hostRules}`;
  const browser = createBrowser(loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: hostRules, WORK_DIR: dir, LOG_LEVEL: 'silent' }), logger);
  const figures: Record<string, string> = {};
  try {
    const once = async (input: IssueInput) => {
      const before = new Set(await issueIds(redmine));
      const agent = issueAgent(redmine, input, { searchWatcher: false });
      const saved = async () => {
        const made = (await issueIds(redmine)).filter((id) => !before.has(id));
        if (made.length !== 1) return false;
        const want = { id: made[0], ...recordFor(input, attachmentBytes(attachmentName(input) as keyof typeof ATTACHMENTS)) };
        return JSON.stringify(await issueRecord(redmine, made[0]!)) === JSON.stringify(want);
      };
      return runOnce({ cache, hostRules, dir, latencyMs, versionId: 'bench-issue-v1', input, specification: issueWorkflow(redmine, files.host), script: agent.script, saved }, browser);
    };
    const first: IssueInput = { ...checkoutIssue(files, redmine.facts.password), tracker: 'Feature' };
    const firstRun = await once(first);
    show(figures, 'redmine', 'first run', firstRun);
    show(figures, 'redmine', 'repeat, every field new', await once(everyFieldNew(first, files)), firstRun);
    return figures;
  } finally {
    await browser.close();
    await Promise.allSettled([redmine.stop(), files.close()]);
  }
}

async function benchLedger(cache: RunCacheStore, latencyMs: number, dir: string): Promise<Record<string, string>> {
  const app = await startLedgerApp();
  const hostRules = `MAP ${app.host} 127.0.0.1`;
  const browser = createBrowser(loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: hostRules, WORK_DIR: dir, LOG_LEVEL: 'silent' }), logger);
  const figures: Record<string, string> = {};
  try {
    const once = async (input: typeof FIRST_ENTRY) => {
      const before = app.saved.length;
      const saved = () => Promise.resolve(app.saved.length === before + 1 && JSON.stringify(app.saved.at(-1)) === JSON.stringify(ledgerRecord(input)));
      const script = ledgerAgent(input, () => (app.saved.length > before ? String(app.saved.length) : undefined));
      return runOnce({ cache, hostRules, dir, latencyMs, versionId: 'bench-ledger-v1', input, specification: ledgerWorkflow(app.origin, app.host), script, saved }, browser);
    };
    const firstRun = await once(FIRST_ENTRY);
    show(figures, 'computer use (ledger)', 'first run', firstRun);
    show(figures, 'computer use (ledger)', 'repeat, every field new', await once(SECOND_ENTRY), firstRun);
    return figures;
  } finally {
    await browser.close();
    await app.close();
  }
}
