import { ExecutionError } from '../contract/errors.js';
import { billedParts, billedTokens, type BilledPart, type RunBudget } from '../domain/usage.js';
import type { ModelClient, ModelInterceptor, ModelPricing, ModelTurnRequest } from '../model/types.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { RunCounters } from '../execution/counters.js';
import type { ModelResponse, TokenUsage } from '../contract/recording.js';
import { composeModel } from './model-pipeline.js';

/**
 * The meter, a stage of the run's model pipeline (model-pipeline.ts) that every request passes,
 * whoever sends it: the agent's loop, a replay's final check, a repair, the model taking a
 * replay over, the turns after a person answered. Each request passes here, so this is where a run's usage is added up and priced, and where its
 * budget holds (docs/specification.md#budget):
 *
 * - before a request: once the run's billed tokens or their estimated cost have reached a cap,
 *   no request is sent: the call throws `budget_exceeded` (the run then fails like any other,
 *   its artifacts uploaded). A turn that crossed the cap has had its answer: its calls still
 *   run, and a `finish` among them ends the run as the model said;
 * - with a token cap, each request carries it and what is left (the API's task budget where the
 *   model takes one: model/types.ts `taskBudget`);
 * - after a response: what it was billed (domain/usage.ts `billedParts`: a compaction's tokens
 *   included), each part priced at its model's prices, is told as `model_usage` once per model:
 *   the run's counters (execution/counters.ts) add it up, before the next request is sent, and
 *   the metrics keep the cost by model.
 *
 * A failed request (no response) bills nothing and adds nothing.
 */
export interface UsageMeterOptions {
  /** The run's counters, read for the budget: they hear the `model_usage` this meter tells. */
  counters: RunCounters;
  budget: RunBudget;
  pricing: ModelPricing;
  events: Pick<ExecutionEventSink, 'notify'>;
}

export function meterRequests(options: UsageMeterOptions): ModelInterceptor {
  const { counters, budget } = options;
  return async (request, signal, next): Promise<ModelResponse> => {
    const over = budgetReached(counters, budget);
    if (over) throw new ExecutionError('budget_exceeded', over);
    const sent: ModelTurnRequest = budget.tokens === undefined ? request : { ...request, taskBudget: { total: budget.tokens, remaining: budget.tokens - billedTokens(counters.usage) } };
    const response = await next(sent, signal);
    record(options, billedParts(response, request.model));
    return response;
  };
}

/** A model under the meter alone (a part of the run tried on its own). */
export function meterModel(inner: ModelClient, options: UsageMeterOptions): ModelClient {
  return composeModel(inner, [meterRequests(options)]);
}

/** Why the run may send no further request, or undefined while it may. */
export function budgetReached(stats: Pick<RunCounters, 'usage' | 'costUsd'>, budget: RunBudget): string | undefined {
  const tokens = billedTokens(stats.usage);
  if (budget.tokens !== undefined && tokens >= budget.tokens) {
    return `the run used ${tokens.toLocaleString('en-US')} model tokens, its budget is ${budget.tokens.toLocaleString('en-US')}: no further model request is sent`;
  }
  if (budget.usd !== undefined && stats.costUsd >= budget.usd) {
    return `the run's model tokens cost an estimated $${stats.costUsd.toFixed(4)}, its budget is $${budget.usd}: no further model request is sent`;
  }
  return undefined;
}

function record(options: UsageMeterOptions, parts: readonly BilledPart[]): void {
  const { pricing, events } = options;
  const byModel = new Map<string, { usage: TokenUsage; usd: number; fallback: boolean; source: ReturnType<ModelPricing['price']>['source'] }>();
  for (const part of parts) {
    // Each part at its own prices: a band (Haiku 5.5's) depends on that sampling's prompt alone.
    const priced = pricing.price(part.model, part.usage);
    const entry = byModel.get(part.model) ?? { usage: zero(), usd: 0, fallback: false, source: priced.source };
    add(entry.usage, part.usage);
    entry.usd += priced.usd;
    entry.fallback ||= priced.source === 'fallback';
    byModel.set(part.model, entry);
  }
  for (const [model, { usage, usd, fallback, source }] of byModel) {
    events.notify('model_usage', { model, usage: { ...usage }, costUsd: usd, prices: fallback ? 'fallback' : source });
  }
}

const zero = (): TokenUsage => ({ inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });

function add(total: TokenUsage, turn: TokenUsage): void {
  total.inputTokens += turn.inputTokens;
  total.outputTokens += turn.outputTokens;
  total.cacheReadInputTokens += turn.cacheReadInputTokens;
  total.cacheCreationInputTokens += turn.cacheCreationInputTokens;
}
