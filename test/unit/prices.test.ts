import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/schema.js';
import { costOf, createModelPricing, FALLBACK_PRICES, PRICE_TABLE, pricesOf } from '../../src/model/prices.js';
import { MODEL_TABLE } from '../../src/model/tool-versions.js';
import type { TokenUsage } from '../../src/contract/recording.js';

const usage = (inputTokens: number, outputTokens = 0, cacheReadInputTokens = 0, cacheCreationInputTokens = 0): TokenUsage => ({ inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens });
const MILLION = 1_000_000;

describe('the price table', () => {
  it('prices every family of the model table from the table itself, never the fallback', () => {
    for (const [family] of MODEL_TABLE) {
      const id = family.endsWith('-') ? `${family}5-sonnet-20241022` : family;
      expect(pricesOf(id).source, id).toBe('table');
    }
  });

  it('gives each model its own prices: a million tokens of each kind at the list price', () => {
    const of = (model: string) => {
      const { prices } = pricesOf(model);
      return [costOf(prices, usage(MILLION)), costOf(prices, usage(0, MILLION)), costOf(prices, usage(0, 0, MILLION)), costOf(prices, usage(0, 0, 0, MILLION))];
    };
    expect(of('claude-opus-5-5')).toEqual([4, 20, 0.2, 5]);
    expect(of('claude-sonnet-5')).toEqual([2, 10, 0.2, 2.5]);
    expect(of('claude-fable-5-1')).toEqual([10, 50, 0.25, 12.5]);
    expect(of('claude-fable-5')).toEqual([10, 50, 1, 12.5]);
    expect(of('claude-fable-5-2')).toEqual([8, 40, 0.2, 10]);
    expect(of('claude-opus-4-1')).toEqual([15, 75, 1.5, 18.75]);
    expect(of('claude-sonnet-4-5')).toEqual([3, 15, 0.3, 3.75]);
    expect(of('claude-haiku-4-5')).toEqual([1, 5, 0.1, 1.25]);
    // No longer every model at Sonnet's prices: on a small prompt Opus 5.5 and Haiku 5.5 differ by a factor of 40.
    const small = (model: string) => costOf(pricesOf(model).prices, usage(10_000, 1_000));
    expect(small('claude-opus-5-5') / small('claude-haiku-5-5')).toBeCloseTo(40, 9);
  });

  it('matches dated ids and aliases to their family, and another minor version to its own row', () => {
    expect(pricesOf('claude-opus-5-5-20260922').prices).toBe(pricesOf('claude-opus-5-5').prices);
    expect(pricesOf('claude-opus-4-20250514').prices).toBe(pricesOf('claude-opus-4-0').prices);
    expect(pricesOf('Claude-Sonnet-5-Latest').prices).toBe(pricesOf('claude-sonnet-5').prices);
    expect(pricesOf('claude-opus-5').prices).not.toBe(pricesOf('claude-opus-5-5').prices);
    expect(pricesOf('claude-fable-5').prices).not.toBe(pricesOf('claude-fable-5-2').prices);
  });

  it('bills Haiku 5.5 by the band of each request: its prompt counted with cache reads and writes', () => {
    const { prices } = pricesOf('claude-haiku-5-5');
    expect(costOf(prices, usage(100_000, 1_000))).toBeCloseTo(0.1 * 0.1 + 0.0005, 10);
    // 60k uncached + 50k read: past 100k, so the dearer band for every token of the request.
    expect(costOf(prices, usage(60_000, 1_000, 50_000))).toBeCloseTo((60_000 * 0.5 + 1_000 * 2.5 + 50_000 * 0.05) / MILLION, 10);
  });

  it('prices an id nobody knows at the dearest current row, and says so', () => {
    expect(pricesOf('claude-nova-7')).toEqual({ prices: FALLBACK_PRICES, source: 'fallback' });
    expect(FALLBACK_PRICES.inputPerMTok).toBe(Math.max(...PRICE_TABLE.filter(([f]) => /-5(-|$)/.test(f)).map(([, p]) => p.inputPerMTok)));
  });

  it('takes MODEL_PRICES before the table, the longest family first, and `*` for ids the table does not know', () => {
    const config = loadConfig({
      MODEL_PRICES: JSON.stringify({
        'claude-opus-5-5': { inputPerMTok: 3, outputPerMTok: 18, cacheReadPerMTok: 0.15, cacheWritePerMTok: 4 },
        'claude-opus-5-5-20261201': { inputPerMTok: 1, outputPerMTok: 1, cacheReadPerMTok: 1, cacheWritePerMTok: 1 },
        '*': { inputPerMTok: 0.5, outputPerMTok: 0.5, cacheReadPerMTok: 0.5, cacheWritePerMTok: 0.5 },
      }),
    });
    const pricing = createModelPricing(config.MODEL_PRICES);
    expect(pricing.price('claude-opus-5-5', usage(MILLION))).toEqual({ usd: 3, source: 'configured' });
    expect(pricing.price('claude-opus-5-5-20261201', usage(MILLION))).toEqual({ usd: 1, source: 'configured' });
    expect(pricing.price('claude-sonnet-5', usage(MILLION))).toEqual({ usd: 2, source: 'table' });
    expect(pricing.price('my-proxy-model', usage(MILLION))).toEqual({ usd: 0.5, source: 'configured' });
    expect(() => loadConfig({ MODEL_PRICES: '{"claude-x": {"inputPerMTok": 1}}' })).toThrow(/MODEL_PRICES/);
    expect(() => loadConfig({ MODEL_PRICES: '{"claude-x": {"inputPerMTok": -1, "outputPerMTok": 1, "cacheReadPerMTok": 1, "cacheWritePerMTok": 1}}' })).toThrow(/MODEL_PRICES/);
    expect(() => loadConfig({ MODEL_PRICES: 'not json' })).toThrow(/MODEL_PRICES=.*must be JSON/);
    // A __proto__ key would be dropped without a word, a price of 1e308 make every cost Infinity: both refused.
    expect(() => loadConfig({ MODEL_PRICES: '{"__proto__": {"inputPerMTok": 1, "outputPerMTok": 1, "cacheReadPerMTok": 1, "cacheWritePerMTok": 1}}' })).toThrow(/MODEL_PRICES.*__proto__/);
    expect(() => loadConfig({ MODEL_PRICES: '{"claude-x": {"inputPerMTok": 1e308, "outputPerMTok": 1, "cacheReadPerMTok": 1, "cacheWritePerMTok": 1}}' })).toThrow(/MODEL_PRICES/);
  });

  it('adds up: the cost of two requests is the sum of theirs, and never negative (generated usages, every model)', () => {
    const families = PRICE_TABLE.map(([family]) => family);
    const tokens = fc.integer({ min: 0, max: 400_000 });
    const usages = fc.record({ inputTokens: tokens, outputTokens: tokens, cacheReadInputTokens: tokens, cacheCreationInputTokens: tokens });
    fc.assert(
      fc.property(fc.constantFrom(...families), usages, (family, used) => {
        const { prices } = pricesOf(family);
        const cost = costOf(prices, used);
        expect(cost).toBeGreaterThanOrEqual(0);
        // Without bands, pricing is linear in each kind of token.
        if (!prices.above) expect(cost).toBeCloseTo(costOf(prices, { ...used, outputTokens: 0 }) + costOf(prices, usage(0, used.outputTokens)), 9);
      }),
    );
  });
});
