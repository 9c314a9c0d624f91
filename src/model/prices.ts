/**
 * What each model's tokens cost (docs/model.md#prices), beside the model table (tool-versions.ts)
 * and matched the same way: by family, so dated ids and `-latest` aliases cost what their family
 * costs. USD per million tokens, as the API bills them: uncached input, output (thinking
 * included), cache reads, and cache writes at the 5-minute rate (the worker's breakpoints are
 * `ephemeral`, the 5-minute cache).
 *
 * Source: the model pages of platform.claude.com ("Pricing" of each model's overview) and its
 * pricing page, read on 2026-11-26. Fable 5.2 and Mythos 5.2 are not on the pages this was read
 * from; their row is the list price published at their release (2026-11-09), $8 / $40, cache
 * reads $0.20, writes $10. Haiku 5.5 is billed in two bands by the size of each request's prompt
 * (input, cache reads and cache writes together): up to 100,000 tokens, and above; its cache
 * write above the band is 1.25 × its input price there, the standard ratio, as the page gives
 * no figure. Long-context surcharges of older models (Sonnet 4 and 4.5 past 200,000 tokens with
 * the 1M beta) are not modelled: the worker never sends that beta.
 *
 * MODEL_PRICES (docs/configuration.md) overrides or adds rows without a release.
 */
import { sameFamily } from './tool-versions.js';
import type { ModelPricing, PricedUsage, TokenPrices } from './types.js';
import type { TokenUsage } from '../contract/recording.js';

/** One row of the table: a family's prices, and above a prompt size, others. */
export interface ModelPrices extends TokenPrices {
  /** Requests whose prompt (input + cache reads + cache writes) is larger than `promptTokens` are billed at `prices`. */
  above?: { promptTokens: number; prices: TokenPrices };
}

const p = (inputPerMTok: number, outputPerMTok: number, cacheWritePerMTok: number, cacheReadPerMTok: number): TokenPrices => ({ inputPerMTok, outputPerMTok, cacheWritePerMTok, cacheReadPerMTok });

const FABLE_5_2 = p(8, 40, 10, 0.2);
const FABLE_5_1 = p(10, 50, 12.5, 0.25);
const FABLE_5 = p(10, 50, 12.5, 1);
const OPUS_5_5 = p(4, 20, 5, 0.2);
const OPUS_4_5_TO_5 = p(5, 25, 6.25, 0.5);
const OPUS_4_AND_3 = p(15, 75, 18.75, 1.5);
const SONNET_5 = p(2, 10, 2.5, 0.2);
const SONNET_3_7_TO_4_6 = p(3, 15, 3.75, 0.3);

/** Model family → prices (the same matching as the model table: a family, its dated ids and aliases). */
export const PRICE_TABLE: ReadonlyArray<readonly [family: string, prices: ModelPrices]> = [
  ['claude-fable-5-2', FABLE_5_2],
  ['claude-mythos-5-2', FABLE_5_2],
  ['claude-fable-5-1', FABLE_5_1],
  ['claude-mythos-5-1', FABLE_5_1],
  ['claude-fable-5', FABLE_5],
  ['claude-mythos-5', FABLE_5],
  ['claude-opus-5-5', OPUS_5_5],
  ['claude-opus-5', OPUS_4_5_TO_5],
  ['claude-opus-4-8', OPUS_4_5_TO_5],
  ['claude-opus-4-7', OPUS_4_5_TO_5],
  ['claude-opus-4-6', OPUS_4_5_TO_5],
  ['claude-opus-4-5', OPUS_4_5_TO_5],
  ['claude-opus-4-1', OPUS_4_AND_3],
  ['claude-opus-4-0', OPUS_4_AND_3],
  ['claude-opus-4', OPUS_4_AND_3],
  ['claude-sonnet-5-5', SONNET_5],
  ['claude-sonnet-5', SONNET_5],
  ['claude-sonnet-4-6', SONNET_3_7_TO_4_6],
  ['claude-sonnet-4-5', SONNET_3_7_TO_4_6],
  ['claude-sonnet-4-0', SONNET_3_7_TO_4_6],
  ['claude-sonnet-4', SONNET_3_7_TO_4_6],
  ['claude-haiku-5-5', { ...p(0.1, 0.5, 0.125, 0.01), above: { promptTokens: 100_000, prices: p(0.5, 2.5, 0.625, 0.05) } }],
  ['claude-haiku-4-5', p(1, 5, 1.25, 0.1)],
  ['claude-3-7-sonnet', SONNET_3_7_TO_4_6],
  ['claude-3-5-sonnet', SONNET_3_7_TO_4_6],
  ['claude-3-5-haiku', p(0.8, 4, 1, 0.08)],
  ['claude-3-opus', OPUS_4_AND_3],
  ['claude-3-haiku', p(0.25, 1.25, 0.3, 0.03)],
];

/**
 * An id neither the table nor MODEL_PRICES knows (a newer model, a proxy's name) is priced as the
 * dearest row of the current generation, Fable 5's, so that a dollar budget errs on the side of
 * stopping early rather than overspending. Such a request is marked `fallback` in output.json.
 */
export const FALLBACK_PRICES: ModelPrices = FABLE_5;

/** MODEL_PRICES: rows by model id or family (matched like the table's), or `*` for every model. */
export type PriceOverrides = Readonly<Record<string, TokenPrices>>;

/** The prices of one model: MODEL_PRICES first, then the table, else the fallback. */
export function pricesOf(model: string, overrides: PriceOverrides = {}): { prices: ModelPrices; source: PricedUsage['source'] } {
  const id = model.trim().toLowerCase();
  // The longest key that names the id's family wins, so `claude-opus-5` does not shadow a `claude-opus-5-20260724` entry.
  const configured = Object.keys(overrides)
    .filter((key) => key !== '*' && sameFamily(id, key.trim().toLowerCase()))
    .sort((a, b) => b.length - a.length)[0];
  if (configured !== undefined) return { prices: overrides[configured]!, source: 'configured' };
  for (const [family, prices] of PRICE_TABLE) if (sameFamily(id, family)) return { prices, source: 'table' };
  if (overrides['*']) return { prices: overrides['*'], source: 'configured' };
  return { prices: FALLBACK_PRICES, source: 'fallback' };
}

/** The cost of one request's usage: the band its prompt falls in, each kind of token at its price. */
export function costOf(prices: ModelPrices, usage: TokenUsage): number {
  const prompt = usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
  const band = prices.above && prompt > prices.above.promptTokens ? prices.above.prices : prices;
  return (
    (usage.inputTokens * band.inputPerMTok +
      usage.outputTokens * band.outputPerMTok +
      usage.cacheReadInputTokens * band.cacheReadPerMTok +
      usage.cacheCreationInputTokens * band.cacheWritePerMTok) /
    1_000_000
  );
}

/** The pricing port (model/types.ts) over the table and MODEL_PRICES. */
export function createModelPricing(overrides: PriceOverrides = {}): ModelPricing {
  return {
    price(model, usage) {
      const { prices, source } = pricesOf(model, overrides);
      return { usd: costOf(prices, usage), source };
    },
  };
}
