import type { BetaIterationsUsage, BetaUsage } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { billedParts, billedTokens, usageReport } from '../../src/domain/usage.js';
import { fromApiUsage } from '../../src/model/api-usage.js';
import { costOf, createModelPricing, pricesOf } from '../../src/model/prices.js';
import type { ModelTurnRequest } from '../../src/model/types.js';
import { createExecutionEvents } from '../../src/execution/events.js';
import { meterModel } from '../../src/runner/usage-meter.js';
import { say, scriptedModel } from '../support/scripted-model.js';
import { countEvents } from '../../src/execution/counters.js';
import type { TokenUsage } from '../../src/contract/recording.js';

type Entry = BetaIterationsUsage[number];
const MODEL = 'claude-opus-5-5';

const top = (input: number, output: number, cacheRead = 0, cacheWrite = 0, iterations: Entry[] | null = null): BetaUsage =>
  ({ input_tokens: input, output_tokens: output, cache_read_input_tokens: cacheRead, cache_creation_input_tokens: cacheWrite, cache_creation: null, iterations }) as BetaUsage;
const entry = (type: Entry['type'], input: number, output: number, cacheRead = 0, cacheWrite = 0, model?: string): Entry =>
  ({ type, input_tokens: input, output_tokens: output, cache_read_input_tokens: cacheRead, cache_creation_input_tokens: cacheWrite, cache_creation: null, ...(type === 'compaction' ? {} : { model: model ?? null }) }) as Entry;
const asTokens = (e: Entry): TokenUsage => ({ inputTokens: e.input_tokens, outputTokens: e.output_tokens, cacheReadInputTokens: e.cache_read_input_tokens, cacheCreationInputTokens: e.cache_creation_input_tokens });
const sum = (usages: TokenUsage[]) => usages.reduce((a, u) => a + billedTokens(u), 0);

describe("the API's usage as the worker counts it", () => {
  it("the documented compacting answer: 23,000 in / 1,000 out at the top, a compaction of 180,000 / 3,500: billed 207,500", () => {
    const mapped = fromApiUsage(top(23_000, 1_000, 0, 0, [entry('compaction', 180_000, 3_500), entry('message', 23_000, 1_000)]), MODEL);
    // The answer's own usage stays what the top level says (the context the answer ran in).
    expect(mapped.usage).toEqual({ inputTokens: 23_000, outputTokens: 1_000, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    const parts = billedParts(mapped, MODEL);
    expect(parts.map((p) => p.model)).toEqual([MODEL, MODEL]);
    expect(sum(parts.map((p) => p.usage))).toBe(207_500);
  });

  it('without iterations (or an empty list), the top level is the bill', () => {
    for (const iterations of [null, []]) {
      const mapped = fromApiUsage(top(1_200, 80, 30_000, 900, iterations), MODEL);
      expect(mapped.billed).toBeUndefined();
      expect(billedParts(mapped, MODEL)).toEqual([{ model: MODEL, usage: { inputTokens: 1_200, outputTokens: 80, cacheReadInputTokens: 30_000, cacheCreationInputTokens: 900 } }]);
    }
  });

  it('an entry run by another model is priced as that model; a dated id of the request\'s own family stays in its row', () => {
    const mapped = fromApiUsage(top(500, 50, 0, 0, [entry('message', 500, 50, 0, 0, 'claude-opus-5-5-20261101'), entry('advisor_message', 2_000, 300, 0, 0, 'claude-fable-5-2')]), MODEL);
    expect(billedParts(mapped, MODEL).map((p) => p.model)).toEqual([MODEL, 'claude-fable-5-2']);
  });

  it('whatever the API itemises: billed is the sum over the entries, each kind apart, never less than the top level (generated)', () => {
    const n = fc.integer({ min: 0, max: 400_000 });
    const gen = fc.record({ type: fc.constantFrom<Entry['type']>('message', 'compaction', 'advisor_message', 'fallback_message'), input: n, output: n, read: n, write: n });
    fc.assert(
      fc.property(fc.array(gen, { minLength: 1, maxLength: 8 }), (generated) => {
        const entries = generated.map((g) => entry(g.type, g.input, g.output, g.read, g.write));
        // The top level, as the API documents it: the samplings of the answer, never a compaction.
        const answer = entries.filter((e) => e.type !== 'compaction');
        const field = (key: 'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens') => answer.reduce((a, e) => a + e[key], 0);
        const usage = top(field('input_tokens'), field('output_tokens'), field('cache_read_input_tokens'), field('cache_creation_input_tokens'), entries);
        const parts = billedParts(fromApiUsage(usage, MODEL), MODEL).map((p) => p.usage);
        expect(parts).toEqual(entries.map(asTokens));
        const billed = sum(parts);
        expect(billed).toBe(entries.reduce((a, e) => a + billedTokens(asTokens(e)), 0));
        expect(billed).toBeGreaterThanOrEqual(billedTokens(fromApiUsage(usage, MODEL).usage));
        // Nothing counted twice: the compaction's tokens are exactly what the bill adds to the top level.
        const compacted = entries.filter((e) => e.type === 'compaction').reduce((a, e) => a + billedTokens(asTokens(e)), 0);
        expect(billed - billedTokens(fromApiUsage(usage, MODEL).usage)).toBe(compacted);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the metered model client, for a request that compacted', () => {
  const request: ModelTurnRequest = { model: MODEL, system: [], tools: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }], maxTokens: 100, betas: [] };

  it('counts and prices every part against the budget, in one row per model and one model_usage per model', async () => {
    const compacting = fromApiUsage(top(23_000, 1_000, 0, 0, [entry('compaction', 180_000, 3_500), entry('message', 23_000, 1_000)]), MODEL);
    const inner = scriptedModel([
      { content: [say('ok')], ...compacting },
      { content: [say('ok')], ...compacting },
    ]);
    const events = createExecutionEvents({ executionId: 'x', redact: (v) => v });
    const stats = countEvents(events);
    const heard: Array<{ model: string; costUsd: number }> = [];
    events.on('model_usage', ({ model, costUsd }) => heard.push({ model, costUsd }));
    const model = meterModel(inner, { counters: stats, budget: { tokens: 100_000 }, pricing: createModelPricing(), events });
    await model.createTurn(request, new AbortController().signal);
    // The first request alone billed past the cap: the second is never sent.
    await expect(model.createTurn(request, new AbortController().signal)).rejects.toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('207,500') });
    expect(inner.requests).toHaveLength(1);
    const prices = pricesOf(MODEL).prices;
    const cost = costOf(prices, { inputTokens: 180_000, outputTokens: 3_500, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }) + costOf(prices, { inputTokens: 23_000, outputTokens: 1_000, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    expect(stats.costUsd).toBeCloseTo(cost, 9);
    expect(heard).toEqual([{ model: MODEL, costUsd: expect.closeTo(cost, 9) }]);
    const report = usageReport(stats.usage, stats.costUsd, stats.models);
    expect(report).toMatchObject({ billedTokens: 207_500, inputTokens: 203_000, outputTokens: 4_500 });
    expect(report.byModel).toEqual([expect.objectContaining({ model: MODEL, requests: 1, inputTokens: 203_000, outputTokens: 4_500 })]);
  });
});
