import { z } from 'zod';
import type { PricedUsage, TokenUsage } from '../model/types.js';

/**
 * A run's model usage and what it cost, as `output.json` and the last line of `logs.jsonl` carry
 * it (docs/counters-and-artifacts.md#outputjson), and its budget (docs/specification.md#budget).
 * Wire shapes: fields are only ever added.
 */

/** What the requests to one model used and cost. */
export interface ModelUsage extends TokenUsage {
  requests: number;
  /** Estimated, at that model's prices (unrounded while the run goes on). */
  costUsd: number;
  /** Where its prices came from; `fallback` once any request was priced as a model nobody priced. */
  prices: PricedUsage['source'];
}

/** `output.json`'s `usage`. */
export interface UsageReport extends TokenUsage {
  /** Each request at its own model's prices, rounded to 6 decimals; null only in documents written before prices per model. */
  estimatedCostUsd: number | null;
  /** Tokens as the API bills them: input, output, cache reads and cache writes together. */
  billedTokens: number;
  /** The same, by model, in the order the models were first asked. */
  byModel: Array<{ model: string } & ModelUsage>;
}

/**
 * What a reader of `output.json` takes of its cost (the local API's dashboard: the cost per
 * execution and per workflow). Checked against `UsageReport` below, so the two cannot disagree.
 */
export const outputCostSchema = z.object({ usage: z.object({ estimatedCostUsd: z.number().nonnegative().nullable() }) });
const costAgrees: Pick<UsageReport, 'estimatedCostUsd'> extends z.infer<typeof outputCostSchema>['usage'] ? (z.infer<typeof outputCostSchema>['usage'] extends Pick<UsageReport, 'estimatedCostUsd'> ? true : never) : never = true;
void costAgrees;

/** `output.json`'s `budget`: the caps the run had (null: none). */
export interface BudgetReport {
  tokens: number | null;
  usd: number | null;
}

/** The caps of one run; an absent cap is none. */
export interface RunBudget {
  tokens?: number;
  usd?: number;
}

/** Tokens as the API bills them. */
export function billedTokens(usage: TokenUsage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
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
