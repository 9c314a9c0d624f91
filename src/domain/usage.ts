import type { ModelUsageReport, UsageReport } from '../contract/output.js';
import type { Specification } from '../contract/specification.js';
import type { ModelResponse, TokenUsage } from '../contract/recording.js';

/**
 * A run's model usage and what it cost, as `output.json` and the last line of `logs.jsonl` carry
 * it (docs/counters-and-artifacts.md#outputjson), and its budget (docs/specification.md#budget).
 * The wire shapes are declared in contract/output.ts; here, how they are made.
 */

/** What the requests to one model used and cost while the run goes on (unrounded); output.json's `usage.byModel` without the model's id. */
export type ModelUsage = Omit<ModelUsageReport, 'model'>;

/** The caps of one run, as the specification's `budget` gives them; an absent cap is none. */
export type RunBudget = NonNullable<Specification['budget']>;

/** Tokens as the API bills them. */
export function billedTokens(usage: TokenUsage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
}

/** One part of what a request was billed: the model that ran it and its tokens. */
export interface BilledPart {
  model: string;
  usage: TokenUsage;
}

/**
 * What a request was billed, part by part (docs/model.md#prices): the API's itemised samplings
 * when it gave them (a compaction's tokens are only there), else the answer's usage. Each part
 * at the model that ran it, the request's own model unless the API named another. Everything
 * that counts or prices a request reads it here.
 */
export function billedParts(response: Pick<ModelResponse, 'usage' | 'billed'>, requestModel: string): BilledPart[] {
  if (!response.billed || response.billed.length === 0) return [{ model: requestModel, usage: response.usage }];
  return response.billed.map((part) => ({ model: part.model ?? requestModel, usage: part.usage }));
}

/** Dollars as reports show them: 6 decimals. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1_000_000) / 1_000_000;
}

/** The report of a run's usage, from its totals and its models. */
export function usageReport(usage: TokenUsage, costUsd: number, models: ReadonlyMap<string, ModelUsage>): UsageReport {
  return {
    ...usage,
    estimatedCostUsd: roundUsd(costUsd),
    billedTokens: billedTokens(usage),
    byModel: [...models].map(([model, used]) => ({ model, ...used, costUsd: roundUsd(used.costUsd) })),
  };
}

/** The budget of a specification, each cap defaulting to the worker's. */
export function resolveBudget(spec: RunBudget | undefined, defaults: RunBudget): RunBudget {
  const tokens = spec?.tokens ?? defaults.tokens;
  const usd = spec?.usd ?? defaults.usd;
  return { ...(tokens !== undefined ? { tokens } : {}), ...(usd !== undefined ? { usd } : {}) };
}
