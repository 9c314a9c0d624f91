import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRunnerDeps } from '../../src/compose.js';
import type { Config } from '../../src/config/schema.js';
import { billedTokens, usageReport } from '../../src/domain/usage.js';
import { createAnthropicModel } from '../../src/model/anthropic-client.js';
import { costOf, createModelPricing, pricesOf } from '../../src/model/prices.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { meterModel } from '../../src/runner/usage-meter.js';
import type { Accounting } from '../support/fake-api-tokens.js';
import { longRun } from '../support/long-run.js';
import { browser as member, memberBlock, startScriptedModelServer, type Script, type ScriptedIteration, type ScriptedModelServer, type ScriptedResponse } from '../support/scripted-model-server.js';
import { useShopBrowser } from '../support/shop-browser.js';
import { countEvents } from '../../src/execution/counters.js';
import type { TokenUsage } from '../../src/contract/recording.js';

/**
 * A run's budget (docs/specification.md#budget), whole: the worker on real Chromium, the real SDK
 * against the scripted model server (which checks the task budget as the SDK types it and bills
 * as the API does), a model that never finishes. The run ends `budget_exceeded` at the first
 * request the budget no longer allows, that request never sent, its artifacts uploaded.
 */

const logger = createSilentLogger();
const rig = useShopBrowser('budget', { ANTHROPIC_MAX_RETRIES: '0', VIDEO_FPS: '5' }, logger);

/** A model that clicks around the page for ever (never twice at one point in a row: it is not stuck, just endless). */
const endless = (_request: unknown, index: number) => member('left_click', { target: { type: 'coordinate', x: 80 + (index % 9) * 120, y: 120 + (index % 4) * 150 } });

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  server: ScriptedModelServer;
  /** `logs.jsonl`, parsed. */
  lines: Array<Record<string, unknown>>;
  metrics: ReturnType<typeof createMetrics>;
}

async function run(spec: Record<string, unknown>, settings: Partial<Config> = {}, script: Script = endless): Promise<Run> {
  const server = await startScriptedModelServer(script);
  const config: Config = { ...rig.config, ANTHROPIC_BASE_URL: server.url, VIDEO_ENABLED: false, ...settings };
  const metrics = createMetrics();
  try {
    const store = createLocalStore({ dir: rig.dir, prefix: '' });
    const deps = createRunnerDeps({ config, logger, browser: rig.browser, store, observers: [(events, id) => metrics.watch(events, id)] });
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: null, specification: { prompt: 'Look around the shop', allowedDomains: [new URL(rig.shop.origin).host], startUrl: `${rig.shop.origin}/`, ...spec } }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const lines = readFileSync(fileURLToPath(summary.urls.logsUrl!), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    return { summary, server, lines, metrics };
  } finally {
    await server.stop();
  }
}

const turnsOf = (r: Run) => r.lines.filter((line) => line.type === 'model_turn').map((line) => line.usage as TokenUsage);
const costOfTurns = (model: string, turns: TokenUsage[]) => turns.reduce((sum, usage) => sum + costOf(pricesOf(model).prices, usage), 0);
async function metricCost(r: Run, model: string): Promise<number> {
  const metric = await r.metrics.registry.getSingleMetric('execution_worker_model_cost_usd_total')!.get();
  return metric.values.find((v) => v.labels.model === model)?.value ?? 0;
}

describe('a run with a budget', () => {
  it('a token budget: every request carries the task budget and what is left; none is sent past the cap; budget_exceeded with its artifacts', async () => {
    const cap = 40_000;
    const r = await run({ model: 'claude-opus-5-5', budget: { tokens: cap } });
    const { document } = r.summary;
    expect(document.status).toBe('failed');
    expect(document.error).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('40,000') });
    const turns = turnsOf(r);
    // Every request the server received was answered and counted: none was sent after the cap.
    expect(r.server.requests).toHaveLength(turns.length);
    expect(document.counters.nSteps).toBe(turns.length);
    const billed = turns.map(billedTokens);
    const total = billed.reduce((a, b) => a + b, 0);
    expect(document.usage.billedTokens).toBe(total);
    expect(total).toBeGreaterThanOrEqual(cap);
    // The last request is the one that crossed it: the run billed at most the cap plus one request.
    expect(total - billed.at(-1)!).toBeLessThan(cap);
    expect(total).toBeLessThanOrEqual(cap + billed.at(-1)!);
    // The API's task budget on each request: the whole, and what the requests before it left.
    let used = 0;
    r.server.requests.forEach((request, i) => {
      const body = request.body as { output_config?: unknown };
      expect(body.output_config, `request ${i + 1}`).toEqual({ task_budget: { type: 'tokens', total: cap, remaining: cap - used } });
      expect(String(request.headers['anthropic-beta'])).toContain('task-budgets-2026-03-13');
      used += billed[i]!;
    });
    // Artifacts and the report as for any failure; the cost at Opus 5.5's own prices.
    for (const url of [r.summary.urls.outputUrl, r.summary.urls.logsUrl]) expect(existsSync(fileURLToPath(url!))).toBe(true);
    expect(r.lines.at(-1)).toMatchObject({ type: 'execution_failed', code: 'budget_exceeded' });
    expect(document.budget).toEqual({ tokens: cap, usd: null });
    expect(document.usage.estimatedCostUsd).toBeCloseTo(costOfTurns('claude-opus-5-5', turns), 6);
    expect(document.usage.byModel).toEqual([expect.objectContaining({ model: 'claude-opus-5-5', requests: turns.length, prices: 'table', costUsd: document.usage.estimatedCostUsd })]);
    expect(await metricCost(r, 'claude-opus-5-5')).toBeCloseTo(document.usage.estimatedCostUsd!, 6);
  });

  it('a dollar budget on a model without task budgets: told in words, held by the worker all the same', async () => {
    const cap = 0.02;
    const r = await run({ model: 'claude-sonnet-5', budget: { usd: cap } });
    const { document } = r.summary;
    expect(document.error?.code).toBe('budget_exceeded');
    const turns = turnsOf(r);
    expect(r.server.requests).toHaveLength(turns.length);
    for (const request of r.server.requests) {
      const body = request.body as { output_config?: unknown; system?: Array<{ text: string }> };
      expect(body.output_config).toBeUndefined();
      expect(body.system?.[0]?.text).toContain('This run has a budget of $0.02 of estimated model cost');
    }
    const costs = turns.map((usage) => costOf(pricesOf('claude-sonnet-5').prices, usage));
    const spent = costs.reduce((a, b) => a + b, 0);
    expect(spent).toBeGreaterThanOrEqual(cap);
    expect(spent - costs.at(-1)!).toBeLessThan(cap);
    // Sonnet 5's own prices, not another model's.
    expect(document.usage.estimatedCostUsd).toBeCloseTo(spent, 6);
    expect(spent).not.toBeCloseTo(costOfTurns('claude-opus-5-5', turns), 4);
  });

  it('RUN_BUDGET_TOKENS applies when the specification sets no budget; a specification\'s budget wins', async () => {
    const byDefault = await run({ model: 'claude-opus-5-5' }, { RUN_BUDGET_TOKENS: 25_000 });
    expect(byDefault.summary.document).toMatchObject({ error: { code: 'budget_exceeded' }, budget: { tokens: 25_000, usd: null } });
    const defaultTurns = turnsOf(byDefault);
    expect((byDefault.server.requests[0]!.body as { output_config?: { task_budget?: { total?: number } } }).output_config?.task_budget?.total).toBe(25_000);
    const own = await run({ model: 'claude-opus-5-5', budget: { tokens: 45_000 } }, { RUN_BUDGET_TOKENS: 25_000 });
    expect(own.summary.document).toMatchObject({ error: { code: 'budget_exceeded' }, budget: { tokens: 45_000, usd: null } });
    expect(turnsOf(own).length).toBeGreaterThan(defaultTurns.length);
  });
});

/** The API's documented compacting answer: 23,000 in / 1,000 out at the top level, and a compaction of 180,000 / 3,500 in none of its fields. */
const iteration = (type: ScriptedIteration['type'], input: number, output: number): ScriptedIteration => ({ type, input_tokens: input, output_tokens: output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: null });
const COMPACTING: ScriptedResponse['usage'] = { input_tokens: 23_000, output_tokens: 1_000, iterations: [iteration('compaction', 180_000, 3_500), iteration('message', 23_000, 1_000)] };
const SUMMARY = { type: 'compaction', content: 'Summary of the conversation so far: the shop was looked through.', encrypted_content: null };
const used = (input: number, output: number) => ({ inputTokens: input, outputTokens: output, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
/** What the scripted server billed a request it accounted: the answer, and the compaction's own sampling. */
const billedByServer = (a: Accounting) => a.input + a.cacheRead + a.cacheWrite + (a.output ?? 0) + (a.compaction ? a.compaction.input + a.compaction.output : 0);

describe('a run whose conversation the API compacts', () => {
  it("the real client and the meter count a compaction's tokens: the documented answer bills 207,500, and nothing is sent past a 100,000 cap", async () => {
    const server = await startScriptedModelServer(() => ({ content: [SUMMARY, memberBlock('screenshot')], usage: COMPACTING }));
    try {
      const events = createExecutionEvents({ executionId: 'x', redact: (v) => v });
      const stats = countEvents(events);
      const client = createAnthropicModel({ apiKey: 'sk-ant-budget', baseURL: server.url, maxRetries: 0, logger });
      const model = meterModel(client, { counters: stats, budget: { tokens: 100_000 }, pricing: createModelPricing(), events });
      const request = { model: 'claude-opus-5-5', system: [], tools: [], messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Look around the shop' }] }], maxTokens: 1024, betas: [] };
      const stops: unknown[] = [];
      for (let i = 0; i < 4; i++) await model.createTurn(request, new AbortController().signal).catch((error: unknown) => stops.push(error));
      expect(server.requests).toHaveLength(1);
      expect(stops).toHaveLength(3);
      expect(stops[0]).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('207,500') });
      const report = usageReport(stats.usage, stats.costUsd, stats.models);
      expect(report).toMatchObject({ billedTokens: 207_500, inputTokens: 203_000, outputTokens: 4_500 });
      const prices = pricesOf('claude-opus-5-5').prices;
      expect(report.estimatedCostUsd).toBeCloseTo(costOf(prices, used(180_000, 3_500)) + costOf(prices, used(23_000, 1_000)), 6);
    } finally {
      await server.stop();
    }
  });

  it("the worker on a real page: output.json's usage and the cost metric hold the compaction's tokens, and the budget stops the run at once", async () => {
    const cap = 100_000;
    // The second answer is the API's compacting one; the model would click on for ever.
    const script = (request: Parameters<typeof endless>[0], index: number): ScriptedResponse => (index === 1 ? { content: [SUMMARY, memberBlock('screenshot')], usage: COMPACTING } : endless(request, index));
    const r = await run({ model: 'claude-opus-5-5', budget: { tokens: cap } }, {}, script);
    const { document } = r.summary;
    expect(document.error).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('100,000') });
    const turns = turnsOf(r);
    // The compacting request crossed the cap: no request after it.
    expect(r.server.requests).toHaveLength(2);
    expect(turns).toHaveLength(2);
    expect(turns[1]).toEqual(used(23_000, 1_000));
    // The log says what the compacting request was billed, sampling by sampling.
    const logged = r.lines.filter((line) => line.type === 'model_turn').map((line) => line.billed);
    expect(logged).toEqual([undefined, [{ type: 'compaction', usage: used(180_000, 3_500) }, { type: 'message', usage: used(23_000, 1_000) }]]);
    const compaction = used(180_000, 3_500);
    expect(document.usage.billedTokens).toBe(turns.reduce((sum, usage) => sum + billedTokens(usage), 0) + billedTokens(compaction));
    expect(document.usage.billedTokens).toBeLessThanOrEqual(cap + 207_500);
    const cost = costOfTurns('claude-opus-5-5', turns) + costOf(pricesOf('claude-opus-5-5').prices, compaction);
    expect(document.usage.estimatedCostUsd).toBeCloseTo(cost, 6);
    expect(document.usage.byModel).toEqual([expect.objectContaining({ model: 'claude-opus-5-5', requests: 2, costUsd: document.usage.estimatedCostUsd })]);
    expect(await metricCost(r, 'claude-opus-5-5')).toBeCloseTo(document.usage.estimatedCostUsd!, 6);
  });

  it('a long run the scripted API compacts by its own rule hits a token cap counting the compaction: no request after it, billed at most the cap and one request', async () => {
    const cap = 1_250_000;
    const r = await longRun({
      model: 'claude-opus-5-5',
      space: 'browser',
      turns: 100,
      // No clearing, and compaction at the API's smallest trigger: the conversation grows until the API summarises it.
      contextSettings: { clearTriggerTokens: 10_000_000, keepToolUses: 3, clearAtLeastTokens: 12_000, compactTriggerTokens: 50_000 },
      budget: { tokens: cap },
    });
    expect(r.server.refusals).toEqual([]);
    expect(r.outcome).toMatchObject({ status: 'failed', code: 'budget_exceeded' });
    const accounting = r.server.accounting.map((a) => a!);
    const billed = accounting.map(billedByServer);
    const total = billed.reduce((a, b) => a + b, 0);
    // The API compacted before the cap, and its compaction is in the run's count, token for token.
    expect(accounting.some((a) => a.compaction !== undefined)).toBe(true);
    expect(billedTokens(r.stats.usage)).toBe(total);
    expect(total).toBeGreaterThanOrEqual(cap);
    expect(total - billed.at(-1)!).toBeLessThan(cap);
    expect(total).toBeLessThanOrEqual(cap + billed.at(-1)!);
    // Counting the answers alone, the run would still have been under its cap.
    const answersOnly = accounting.reduce((sum, a) => sum + a.input + a.cacheRead + a.cacheWrite + (a.output ?? 0), 0);
    expect(answersOnly).toBeLessThan(cap);
    // Each request's task budget said what the requests before it had really used.
    let spent = 0;
    r.server.requests.forEach((request, i) => {
      expect((request.body as { output_config?: unknown }).output_config, `request ${i + 1}`).toEqual({ task_budget: { type: 'tokens', total: cap, remaining: cap - spent } });
      spent += billed[i]!;
    });
  });
});
