import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutionError } from '../../src/contract/errors.js';
import { billedTokens, usageReport } from '../../src/domain/usage.js';
import { createModelPricing } from '../../src/model/prices.js';
import type { ModelTurnRequest } from '../../src/model/types.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { meterModel } from '../../src/runner/usage-meter.js';
import { say, scriptedModel } from '../support/scripted-model.js';
import { countEvents } from '../../src/execution/counters.js';
import type { TokenUsage } from '../../src/contract/recording.js';

const request = (model: string): ModelTurnRequest => ({ model, system: [], tools: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }], maxTokens: 100, betas: [] });
const used = (inputTokens: number, outputTokens = 0, cacheReadInputTokens = 0, cacheCreationInputTokens = 0): TokenUsage => ({ inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens });
const signal = new AbortController().signal;

function rig(usages: TokenUsage[], budget: { tokens?: number; usd?: number } = {}) {
  const inner = scriptedModel(usages.map((usage) => ({ content: [say('ok')], usage })));
  const events = createExecutionEvents({ executionId: 'x', redact: (v) => v });
  const stats = countEvents(events);
  const heard: Array<{ model: string; costUsd: number }> = [];
  events.on('model_usage', ({ model, costUsd }) => heard.push({ model, costUsd }));
  const model = meterModel(inner, { counters: stats, budget, pricing: createModelPricing(), events });
  return { inner, stats, heard, model };
}

describe('the metered model client', () => {
  it('adds up every request, priced at its own model, by model, and tells each one', async () => {
    const t = rig([used(1_000_000), used(0, 1_000_000), used(0, 0, 1_000_000)]);
    await t.model.createTurn(request('claude-opus-5-5'), signal);
    await t.model.createTurn(request('claude-haiku-4-5'), signal);
    await t.model.createTurn(request('claude-opus-5-5'), signal);
    expect(t.stats.usage).toEqual(used(1_000_000, 1_000_000, 1_000_000));
    expect(t.stats.costUsd).toBeCloseTo(4 + 5 + 0.2, 9);
    expect(t.heard).toEqual([
      { model: 'claude-opus-5-5', costUsd: 4 },
      { model: 'claude-haiku-4-5', costUsd: 5 },
      { model: 'claude-opus-5-5', costUsd: 0.2 },
    ]);
    const report = usageReport(t.stats.usage, t.stats.costUsd, t.stats.models);
    expect(report).toMatchObject({ estimatedCostUsd: 9.2, billedTokens: 3_000_000 });
    expect(report.byModel).toEqual([
      { model: 'claude-opus-5-5', requests: 2, ...used(1_000_000, 0, 1_000_000), costUsd: 4.2, prices: 'table' },
      { model: 'claude-haiku-4-5', requests: 1, ...used(0, 1_000_000), costUsd: 5, prices: 'table' },
    ]);
  });

  it('marks a model priced by the fallback as such', async () => {
    const t = rig([used(10)]);
    await t.model.createTurn(request('claude-nova-7'), signal);
    expect(t.stats.models.get('claude-nova-7')?.prices).toBe('fallback');
  });

  it('with a token cap, every request carries the task budget and what is left of it; without, none', async () => {
    const t = rig([used(10_000, 500), used(20_000, 500), used(1)], { tokens: 100_000 });
    for (let i = 0; i < 3; i++) await t.model.createTurn(request('claude-opus-5-5'), signal);
    expect(t.inner.requests.map((r) => r.taskBudget)).toEqual([
      { total: 100_000, remaining: 100_000 },
      { total: 100_000, remaining: 89_500 },
      { total: 100_000, remaining: 69_000 },
    ]);
    const bare = rig([used(1)], { usd: 1 });
    await bare.model.createTurn(request('claude-opus-5-5'), signal);
    expect(bare.inner.requests[0]!.taskBudget).toBeUndefined();
  });

  it('sends no request once the tokens reached the cap: budget_exceeded, the model never asked', async () => {
    const t = rig([used(6_000), used(6_000), used(6_000)], { tokens: 12_000 });
    await t.model.createTurn(request('claude-sonnet-5'), signal);
    await t.model.createTurn(request('claude-sonnet-5'), signal);
    const refused = await t.model.createTurn(request('claude-sonnet-5'), signal).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ExecutionError);
    expect(refused).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('12,000') });
    expect(t.inner.requests).toHaveLength(2);
  });

  it('sends no request once the estimated cost reached the dollar cap', async () => {
    // $2 a million input tokens on Sonnet 5: 300k tokens are $0.60 each request.
    const t = rig([used(300_000), used(300_000), used(300_000)], { usd: 1 });
    await t.model.createTurn(request('claude-sonnet-5'), signal);
    await t.model.createTurn(request('claude-sonnet-5'), signal);
    await expect(t.model.createTurn(request('claude-sonnet-5'), signal)).rejects.toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('$1') });
    expect(t.inner.requests).toHaveLength(2);
  });

  it('whatever the requests use, stops at the first request after a cap and spends at most one request past it (generated)', async () => {
    const tokens = fc.integer({ min: 0, max: 50_000 });
    const usage = fc.record({ inputTokens: tokens, outputTokens: tokens, cacheReadInputTokens: tokens, cacheCreationInputTokens: tokens });
    await fc.assert(
      fc.asyncProperty(fc.array(usage, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 600_000 }), fc.option(fc.double({ min: 0.001, max: 5, noNaN: true }), { nil: undefined }), async (usages, cap, usd) => {
        const t = rig(usages, { tokens: cap, ...(usd !== undefined ? { usd } : {}) });
        let stopped: unknown;
        for (let i = 0; i < usages.length && stopped === undefined; i++) {
          await t.model.createTurn(request('claude-opus-5-5'), signal).catch((error: unknown) => (stopped = error));
        }
        const sent = t.inner.requests.length;
        const billedBefore = usages.slice(0, sent - 1).reduce((sum, u) => sum + billedTokens(u), 0);
        // Every request but the last was sent while under both caps.
        expect(billedBefore).toBeLessThan(cap);
        expect(billedTokens(t.stats.usage)).toBeLessThanOrEqual(cap + Math.max(...usages.map(billedTokens)));
        if (stopped !== undefined) {
          expect(stopped).toMatchObject({ code: 'budget_exceeded' });
          expect(billedTokens(t.stats.usage) >= cap || (usd !== undefined && t.stats.costUsd >= usd)).toBe(true);
        } else expect(sent).toBe(usages.length);
      }),
      { numRuns: 200 },
    );
  });
});
