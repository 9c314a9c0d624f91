/**
 * `npm run bench -- cache`: the run cache on a ten-page application form (test/support/flow-app.ts,
 * a back-office menu of 80 links on every page), through the real runner, Redis and Chromium, the
 * scripted model (test/support/flow-agent.ts) answering after a model-like pause
 * (MODEL_LATENCY_MS per turn) and entering the input's values by name, as its prompt says.
 *
 * Printed: the first run (the model does every page); a repeat with a new input on the same
 * pages (replayed, then the final check); and repeats on a changed site — one page changed early
 * (page 2's button renamed), in the middle (page 5's field relabelled and moved), at page 8 (its
 * button renamed) and on the last page (its submit button renamed), and two pages changed (a dialog
 * over page 3, page 7's field relabelled) — each from the first run's cache, each followed by the
 * run after it. For each: model requests, input tokens by the scripted API's accounting (what
 * the tests bound) and estimated, output tokens, wall time, what the cache did, and whether the
 * form got the input. Targets (docs/run-cache.md#repair-not-restart): one changed page costs at
 * most 2 model requests (the repair and the final check) and 0.15× the first run's input
 * tokens; the run after it replays fully (the final check its one request).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRedis } from '../demo/local-redis.js';
import { createBrowser, createRunnerDeps } from '../src/compose.js';
import { loadConfig } from '../src/config/schema.js';
import { runExecution } from '../src/runner/run-execution.js';
import { createLocalStore } from '../src/storage/local-store.js';
import { createRedisRunCache } from '../src/storage/redis-run-cache.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { flowAgent, type FlowInput } from '../test/support/flow-agent.js';
import { startFlowApp, type FlowOptions } from '../test/support/flow-app.js';
import { isFinalCheck } from '../test/support/run-cache-requests.js';
import { startScriptedModelServer, type RecordedRequest } from '../test/support/scripted-model-server.js';
import { benchBlockEditor } from './cache-block-editor.js';
import { benchDjangoAdmin } from './cache-django-admin.js';
import { benchRealApps } from './cache-real-apps.js';
import { addCost } from './cost.js';
import { estimateInputTokens } from './toolset.js';

const MODEL_LATENCY_MS = 1_500;
const logger = createSilentLogger();

/** The changed sites, each against the first run's cache. */
const CHANGES: Array<{ name: string; options: FlowOptions }> = [
  { name: 'page 2 changed (button renamed)', options: { renamed: ['birth'] } },
  { name: 'page 5 changed (field relabelled, moved)', options: { relabelled: ['address'] } },
  { name: 'page 8 changed (button renamed)', options: { renamed: ['start'] } },
  { name: 'page 10 changed (submit renamed)', options: { renamed: ['reference'] } },
  { name: 'pages 3 and 7 changed (dialog, field relabelled)', options: { dialog: ['email'], relabelled: ['permit'] } },
];

const input = (n: number): FlowInput => ({
  name: `Applicant ${n}`,
  born: `19${70 + n}-0${(n % 9) + 1}-1${n % 10}`,
  email: `applicant${n}@example.org`,
  phone: `+44 20 7946 00${10 + n}`,
  street: `${10 + n} Crane Street`,
  city: ['London', 'Accra', 'Leeds'][n % 3]!,
  permit: ['Residential', 'Commercial', 'Event'][n % 3]!,
  starts: `2026-0${(n % 9) + 1}-2${n % 10}`,
  reason: `Works on the house, phase ${n}`,
  reference: `REF-${1000 + n}`,
});

/** A request's input tokens, estimated; the final check carries no toolset, only its one tool. */
function estimate(request: RecordedRequest): number {
  return isFinalCheck(request) ? estimateInputTokens(request, 'browser', 0) : estimateInputTokens(request, 'browser');
}

interface Figures {
  status: string;
  requests: number;
  accounted: number;
  estimated: number;
  outputTokens: number;
  wallMs: number;
  cache: string;
  filled: boolean;
}

export async function benchCache(): Promise<Record<string, number | string>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-cache-'));
  const [redis, app] = await Promise.all([startRedis(), startFlowApp()]);
  const config = loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: 'MAP flow.test 127.0.0.1', WORK_DIR: dir, LOG_LEVEL: 'silent', VIDEO_ENABLED: 'false' });
  const browser = createBrowser(config, logger);
  const cache = createRedisRunCache({ redisUrl: redis.url, prefix: 'bench', queue: 'cache', ttlMs: 600_000, logger });
  const specification = {
    prompt: 'Fill in the permit application from the input, one page after the other, and submit it. Report the application number.',
    allowedDomains: ['flow.test'],
    startUrl: `${app.origin}/apply/applicant`,
    payloadSchema: { type: 'object' },
    outputSchema: { type: 'object', required: ['application'], properties: { application: { type: 'string', pattern: '^APP-\\d+$' } } },
    maxSteps: 30,
  };
  const runOnce = async (versionId: string, values: FlowInput): Promise<Figures> => {
    const model = await startScriptedModelServer(flowAgent(values, { latencyMs: MODEL_LATENCY_MS }));
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir, prefix: '' }), runCache: cache });
      const before = app.filed.length;
      const started = performance.now();
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowVersionId: versionId, inputPayload: values, specification }, new AbortController().signal);
      const wallMs = Math.round(performance.now() - started);
      if (summary.status === 'skipped') throw new Error('skipped');
      const filed = app.filed.slice(before);
      const asked = new Set(Object.keys(filed[0] ?? {}));
      const { cache: c } = summary.document;
      addCost('cache', summary.document.usage.byModel);
      return {
        status: summary.document.status,
        requests: model.requests.length,
        // What the scripted API counted: uncached, cache reads and cache writes together.
        accounted: model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0),
        estimated: model.requests.reduce((sum, r) => sum + estimate(r), 0),
        outputTokens: summary.document.usage.outputTokens,
        wallMs,
        cache: `replayed ${c.replayedSteps}, repaired ${c.repairedSteps}, model ${c.modelSteps}, fallback at ${c.fallbackAtStep ?? '-'}`,
        filled: filed.length === 1 && Object.entries(values).every(([k, v]) => !asked.has(k) || filed[0]![k] === v),
      };
    } finally {
      await model.stop();
    }
  };
  const seed = async (versionId: string) => {
    const entry = (await cache.get('flow-v1', new AbortController().signal)) as Record<string, unknown>;
    await cache.put(versionId, { ...entry, versionId });
  };
  const figures: Record<string, number | string> = {};
  const show = (name: string, r: Figures, first?: Figures) => {
    figures[`${name}: status / form got the input`] = `${r.status} / ${r.filled}`;
    figures[`${name}: model requests`] = r.requests;
    figures[`${name}: input tokens (accounted / estimated)`] = `${r.accounted} / ${r.estimated}${first ? ` (${(r.accounted / first.accounted).toFixed(3)}× the first run)` : ''}`;
    figures[`${name}: output tokens, wall ms`] = `${r.outputTokens}, ${r.wallMs}`;
    figures[`${name}: cache`] = r.cache;
  };
  app.options.menu = true;
  try {
    const first = await runOnce('flow-v1', input(1));
    show('first run', first);
    show('repeat, new input', await runOnce('flow-v1', input(2)), first);
    for (const [i, change] of CHANGES.entries()) {
      const versionId = `flow-change-${i}`;
      await seed(versionId);
      Object.assign(app.options, change.options);
      try {
        show(`repeat, ${change.name}`, await runOnce(versionId, input(10 + i)), first);
        show(`${change.name}, the run after it`, await runOnce(versionId, input(20 + i)), first);
      } finally {
        for (const key of Object.keys(change.options)) delete app.options[key as keyof FlowOptions];
      }
    }
    Object.assign(figures, await benchBlockEditor(cache, MODEL_LATENCY_MS));
    Object.assign(figures, await benchDjangoAdmin(cache, MODEL_LATENCY_MS));
    Object.assign(figures, await benchRealApps(cache, MODEL_LATENCY_MS));
    figures['model latency per turn (scripted)'] = `${MODEL_LATENCY_MS} ms`;
    return figures;
  } finally {
    await browser.close();
    await cache.close();
    await Promise.allSettled([redis.stop(), app.close()]);
    await rm(dir, { recursive: true, force: true });
  }
}
