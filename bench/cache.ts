/**
 * `npm run bench -- cache`: the run cache on a 15-step workflow (a wizard of 14 form pages and a
 * confirmation), through the real runner, Redis and Chromium, the scripted model answering after
 * a model-like pause (MODEL_LATENCY_MS per turn) and entering the input's values by name, as its
 * prompt says. Printed for the first run (the model does every step), a repeat with a new input
 * (replayed, then the final check), and a repeat on a changed site (page 8's button renamed: the
 * replay stops there and the model finishes): model requests, estimated input tokens (all
 * requests, and the first one: the opening, or what a model taking over or the final check is
 * given), the input tokens of the scripted API's accounting (docs/run-cache.md#the-final-check),
 * output tokens and wall time. Every page carries a back-office menu of 80 links. Targets: repeat
 * ≤ 1 model request and ≥ 5× faster; the changed page completes.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRedis } from '../demo/local-redis.js';
import { lastObservation, refIn } from '../demo/workflow.js';
import { createBrowser, createRunnerDeps } from '../src/compose.js';
import { loadConfig } from '../src/config/schema.js';
import { runExecution } from '../src/runner/run-execution.js';
import { createLocalStore } from '../src/storage/local-store.js';
import { createRedisRunCache } from '../src/storage/redis-run-cache.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { delayed, finish, memberBlock, startScriptedModelServer, toolUse, turn, type RecordedRequest, type ScriptedTurn } from '../test/support/scripted-model-server.js';
import { estimateInputTokens } from './toolset.js';

const PAGES = 14;
const MODEL_LATENCY_MS = 1_500;
const logger = createSilentLogger();

/** A back-office app's menu on every page: what makes a whole page's list of elements long. */
const NAVIGATION = `<nav style="display:flex;flex-direction:column">${Array.from({ length: 80 }, (_, i) => `<a href="/section/${i + 1}">Section ${i + 1}: records and reports</a>`).join('')}</nav>`;

/** The wizard: page n asks for field n, its button says "Next" (or, on the changed site, page 8's says "Continue"). */
async function startWizard(): Promise<{ origin: string; renamed: { value: boolean }; received: Record<string, string>; close(): Promise<void> }> {
  const received: Record<string, string> = {};
  const renamed = { value: false };
  let confirmations = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const n = Number(/^\/step\/(\d+)$/.exec(url.pathname)?.[1] ?? 0);
    for (const [k, v] of url.searchParams) received[k] = v;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    if (n >= 1 && n <= PAGES) {
      const button = renamed.value && n === 8 ? 'Continue' : 'Next';
      res.end(`<!doctype html><title>Step ${n} of ${PAGES}</title><body style="display:grid;grid-template-columns:220px 1fr;margin:0">${NAVIGATION}<main><h1>Step ${n}</h1><form action="/step/${n + 1}"><label>Field ${n} <input name="field${n}"></label><button>${button}</button></form></main></body>`);
    } else if (n === PAGES + 1) {
      confirmations++;
      res.end(`<!doctype html><title>Done</title><h1>Done</h1><p>Application APP-${4000 + confirmations} was filed.</p>`);
    } else res.end(`<!doctype html><title>Start</title><a href="/step/1">Start the application</a>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://wizard.test:${port}`, renamed, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A model that fills whatever step it is shown (the input's value by name), presses its button and reads the next page; and checks a replay's final page. */
function wizardAgent() {
  return (request: RecordedRequest): ScriptedTurn => {
    const seen = lastObservation(request.body).split('This is the browser now.').at(-1)!;
    const filed = /Application (\S+) was filed/.exec(seen);
    const tools = (request.body as { tools?: Array<{ name?: string }> }).tools ?? [];
    if (tools.length === 1 && tools[0]!.name === 'verify_replay') {
      return delayed(toolUse('verify_replay', filed ? { matches: true, reason: `Application ${filed[1]} was filed.`, output: { application: filed[1] } } : { matches: false, reason: 'Nothing was filed.' }), MODEL_LATENCY_MS);
    }
    if (filed) return delayed(finish('completed', { application: filed[1] }), MODEL_LATENCY_MS);
    const step = /textbox "Field (\d+)"/.exec(seen)?.[1];
    if (!step) return delayed(turn(memberBlock('left_click', { target: { type: 'ref', ref: refIn(seen, 'link', 'Start the application') } }), memberBlock('read_page', { filter: 'interactive' })), MODEL_LATENCY_MS);
    const button = seen.includes('button "Continue"') ? 'Continue' : 'Next';
    const last = Number(step) === PAGES;
    return delayed(
      turn(
        memberBlock('form_input', { target: { type: 'ref', ref: refIn(seen, 'textbox', `Field ${step}`) }, value: `{{f${step}}}` }),
        memberBlock('left_click', { target: { type: 'ref', ref: refIn(seen, 'button', button) } }),
        memberBlock(last ? 'get_page_text' : 'read_page', last ? {} : { filter: 'interactive' }),
      ),
      MODEL_LATENCY_MS,
    );
  };
}

/** A request's input tokens, estimated; the final check carries no toolset, only its one tool. */
function estimate(request: RecordedRequest): number {
  const tools = (request.body as { tools?: Array<{ name?: string }> }).tools ?? [];
  return tools.length === 1 && tools[0]!.name === 'verify_replay' ? estimateInputTokens(request, 'browser', 0) : estimateInputTokens(request, 'browser');
}

const inputFor = (tag: string) => Object.fromEntries(Array.from({ length: PAGES }, (_, i) => [`f${i + 1}`, `${tag}-value-${i + 1}`]));

export async function benchCache(): Promise<Record<string, number | string>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-cache-'));
  const [redis, wizard] = await Promise.all([startRedis(), startWizard()]);
  const config = loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'bench-not-a-key', BROWSER_HOST_RULES: 'MAP wizard.test 127.0.0.1', WORK_DIR: dir, LOG_LEVEL: 'silent', VIDEO_ENABLED: 'false' });
  const browser = createBrowser(config, logger);
  const cache = createRedisRunCache({ redisUrl: redis.url, prefix: 'bench', queue: 'cache', ttlMs: 600_000, logger });
  const specification = {
    prompt: 'File the application: fill every step with the input, then report the application number.',
    allowedDomains: ['wizard.test'],
    startUrl: `${wizard.origin}/`,
    payloadSchema: { type: 'object' },
    outputSchema: { type: 'object', required: ['application'], properties: { application: { type: 'string', pattern: '^APP-\\d+$' } } },
    maxSteps: 30,
  };
  const runOnce = async (tag: string) => {
    const values = inputFor(tag);
    const model = await startScriptedModelServer(wizardAgent());
    try {
      const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: model.url }, logger, browser, store: createLocalStore({ dir, prefix: '' }), runCache: cache });
      const started = performance.now();
      const summary = await runExecution(deps, { executionId: randomUUID(), workflowVersionId: 'wizard-v1', inputPayload: values, specification }, new AbortController().signal);
      const wallMs = Math.round(performance.now() - started);
      if (summary.status === 'skipped') throw new Error('skipped');
      const filledAll = Object.entries(values).every(([k, v]) => wizard.received[`field${k.slice(1)}`] === v);
      return {
        status: summary.document.status,
        requests: model.requests.length,
        inputTokens: model.requests.reduce((sum, r) => sum + estimate(r), 0),
        // What the scripted API counted: uncached, cache reads and cache writes together.
        accountedTokens: model.accounting.reduce((sum, a) => sum + (a?.total ?? 0), 0),
        // The first request of a run: the opening, or the summary and page a model taking over a replay gets.
        firstInputTokens: model.requests[0] ? estimate(model.requests[0]) : 0,
        outputTokens: summary.document.usage.outputTokens,
        wallMs,
        steps: summary.document.counters.nSteps,
        cache: summary.document.cache,
        output: JSON.stringify(summary.document.output),
        filledAll,
      };
    } finally {
      await model.stop();
    }
  };
  try {
    const first = await runOnce('first');
    const repeat = await runOnce('second');
    wizard.renamed.value = true;
    const changed = await runOnce('third');
    const figures: Record<string, number | string> = {};
    for (const [name, r] of [['first run', first], ['repeat, new input', repeat], ['repeat, page 8 changed', changed]] as const) {
      figures[`${name}: status / steps`] = `${r.status} / ${r.steps}`;
      figures[`${name}: model requests`] = r.requests;
      figures[`${name}: input tokens (estimated)`] = r.inputTokens;
      figures[`${name}: first request's input tokens (estimated)`] = r.firstInputTokens;
      figures[`${name}: input tokens (scripted API's accounting)`] = r.accountedTokens;
      figures[`${name}: output tokens`] = r.outputTokens;
      figures[`${name}: wall ms`] = r.wallMs;
      figures[`${name}: cache`] = `replayed ${r.cache.replayedSteps}, model ${r.cache.modelSteps}, fallback at ${r.cache.fallbackAtStep ?? '-'}`;
      figures[`${name}: output / site got the input`] = `${r.output} / ${r.filledAll}`;
    }
    figures['repeat ÷ first: wall time (target ≤ 0.2)'] = Math.round((repeat.wallMs / first.wallMs) * 1000) / 1000;
    figures[`model latency per turn (scripted)`] = `${MODEL_LATENCY_MS} ms`;
    return figures;
  } finally {
    await browser.close();
    await cache.close();
    await Promise.allSettled([redis.stop(), wizard.close()]);
    await rm(dir, { recursive: true, force: true });
  }
}
