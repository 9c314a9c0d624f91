import type { ModelUsageReport } from '../contract/output.js';
import type { TokenUsage } from '../contract/recording.js';
import type { Counters } from '../contract/reports.js';

/**
 * Mutable tallies owned by the caller, so they survive a run that throws. The model's usage and
 * cost are added by the run's metered model client alone (runner/usage-meter.ts), the one place
 * every request passes: the loop, a replay's final check and a repair only count steps.
 */
export interface RunStats extends Counters {
  usage: TokenUsage;
  /** Estimated cost of `usage`, each request at its model's prices (USD, not rounded). */
  costUsd: number;
  /** Usage and cost by model id, in the order the models were first asked. */
  models: Map<string, Omit<ModelUsageReport, 'model'>>;
}

export function createRunStats(): RunStats {
  return {
    nSteps: 0,
    nAgentActions: 0,
    nScreenshots: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    costUsd: 0,
    models: new Map(),
  };
}
