/**
 * The Django admin's part of `npm run bench -- cache` (docs/run-cache.md#on-a-stock-admin): the
 * stock admin of Debian's Django (test/support/real-apps/django-admin.ts), through the real
 * runner, Redis and Chromium, the scripted model (django-admin-agent.ts) answering after a
 * model-like pause. Printed: the first run and a repeat whose invoice differs in every field. For
 * each: model requests, input tokens by the scripted API's accounting, wall time, and whether
 * Django saved exactly the input.
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
import { FIRST_INVOICE, invoiceAgent, invoiceWorkflow, SECOND_INVOICE, type InvoiceInput } from '../test/support/real-apps/django-admin-agent.js';
import { startDjangoAdmin } from '../test/support/real-apps/django-admin.js';
import { delayed, startScriptedModelServer } from '../test/support/scripted-model-server.js';

const logger = createSilentLogger();


export async function benchDjangoAdmin(cache: RunCacheStore, latencyMs: number): Promise<Record<string, string>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-django-admin-'));
  const admin = await startDjangoAdmin();
  const config = loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: admin.hostRules, WORK_DIR: dir, LOG_LEVEL: 'silent', VIDEO_ENABLED: 'false' });
  const browser = createBrowser(config, logger);
  const figures: Record<string, string> = {};
  let firstTokens = 0;
  const runOnce = async (name: string, invoice: Omit<InvoiceInput, 'password'>) => {
    const values: InvoiceInput = { ...invoice, password: admin.user.password };
    const agent = invoiceAgent(values);
    const model = await startScriptedModelServer((request) => {
      const answer = agent.script(request);
      return 'hang' in answer ? answer : delayed(answer, latencyMs);
    });
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir, prefix: '' }), runCache: cache });
      const before = (await admin.invoices()).length;
      const started = performance.now();
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowVersionId: 'django-admin-v1', inputPayload: values, specification: invoiceWorkflow(admin.origin, admin.host) }, new AbortController().signal);
      const wallMs = Math.round(performance.now() - started);
      if (summary.status === 'skipped') throw new Error('skipped');
      const saved = (await admin.invoices()).slice(before).map(({ id: _id, ...rest }) => rest);
      const want = { vendor: invoice.vendor, reference: invoice.reference, amount: invoice.amount.toFixed(2), issued: invoice.issued, notes: invoice.notes, paid: invoice.paid };
      const exact = saved.length === 1 && JSON.stringify(saved[0]) === JSON.stringify(want);
      const tokens = model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0);
      if (firstTokens === 0) firstTokens = tokens;
      figures[`django admin, ${name}: status / saved exactly the input`] = `${summary.document.status} / ${exact}`;
      figures[`django admin, ${name}: model requests, input tokens, wall ms`] = `${model.requests.length}, ${tokens}${tokens === firstTokens ? '' : ` (${(tokens / firstTokens).toFixed(3)}× the first run)`}, ${wallMs}`;
    } finally {
      await model.stop();
    }
  };
  try {
    await runOnce('first run', FIRST_INVOICE);
    await runOnce('repeat, every field new', SECOND_INVOICE);
    return figures;
  } finally {
    await browser.close();
    await admin.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
