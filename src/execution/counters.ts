import type { ModelUsageReport } from '../contract/output.js';
import type { TokenUsage } from '../contract/recording.js';
import type { Counters } from '../contract/reports.js';
import type { ExecutionEventSource } from './events.js';

/**
 * What a run counted and what its model requests used, as its events told it: nobody adds to a
 * tally, the counters hear the execution's stream (docs/architecture.md#counters). Each count is
 * one event (docs/counters-and-artifacts.md#counters):
 *
 * - `nSteps`: a `model_turn` (the agent's steps and a repair's) or a `replayed_step`;
 * - `nAgentActions`: an `action_counted` (an action run against the browser; not a read, not `finish`);
 * - `nScreenshots`: the images of an `images_captured` (captured for the model);
 * - usage, cost and the rows by model: a `model_usage` (one per model of each request, told by the
 *   meter of the run's model pipeline, which every request passes).
 *
 * The run's parts read them (a step's number, the step cap, the budget) and never change them.
 */
export interface RunCounters extends Readonly<Counters> {
  readonly usage: Readonly<TokenUsage>;
  /** Estimated cost of `usage`, each request at its model's prices (USD, not rounded). */
  readonly costUsd: number;
  /** Usage and cost by model id, in the order the models were first asked. */
  readonly models: ReadonlyMap<string, Readonly<Omit<ModelUsageReport, 'model'>>>;
}

type Tallies = { -readonly [K in keyof Counters]: Counters[K] } & { usage: TokenUsage; costUsd: number; models: Map<string, Omit<ModelUsageReport, 'model'>> };

/** The counters of a run that counted nothing (it never reached the browser). */
export function noCounters(): RunCounters {
  return zeroTallies();
}

/** Counts the events of `source` from now on: subscribe before the run tells any. */
export function countEvents(source: Pick<ExecutionEventSource, 'on'>): RunCounters {
  const tallies = zeroTallies();
  source.on('model_turn', () => void tallies.nSteps++);
  source.on('replayed_step', () => void tallies.nSteps++);
  source.on('action_counted', () => void tallies.nAgentActions++);
  source.on('images_captured', ({ images }) => void (tallies.nScreenshots += images));
  source.on('model_usage', ({ model, usage, costUsd, prices }) => {
    add(tallies.usage, usage);
    tallies.costUsd += costUsd;
    let row = tallies.models.get(model);
    if (!row) {
      row = { requests: 0, inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0, costUsd: 0, prices };
      tallies.models.set(model, row);
    }
    row.requests++;
    add(row, usage);
    row.costUsd += costUsd;
    if (prices === 'fallback') row.prices = 'fallback';
  });
  return tallies;
}

function zeroTallies(): Tallies {
  return {
    nSteps: 0,
    nAgentActions: 0,
    nScreenshots: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    costUsd: 0,
    models: new Map(),
  };
}

function add(total: TokenUsage, turn: TokenUsage): void {
  total.inputTokens += turn.inputTokens;
  total.outputTokens += turn.outputTokens;
  total.cacheReadInputTokens += turn.cacheReadInputTokens;
  total.cacheCreationInputTokens += turn.cacheCreationInputTokens;
}
