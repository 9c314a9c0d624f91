/**
 * What the benchmarks' scenarios cost, by model (docs/operations.md#what-the-benchmarks-cost): each scenario that
 * talks to the scripted model server adds the usage its run reported, each model at its own
 * prices as the worker estimates them (src/model/prices.ts, the same figures as output.json's
 * `usage.byModel`), and `npm run bench` prints the sums at the end. The scripted server counts
 * tokens as the API does, so these are what the same turns would cost on the API; its answers
 * are short, so output tokens are fewer than a real model's.
 */

interface Spent {
  usd: number;
  requests: number;
  billedTokens: number;
}

/** model → scenario → what it spent. */
const spent = new Map<string, Map<string, Spent>>();

/** One run's usage by model, as output.json's `usage.byModel` (or a run's stats) has it. */
export interface ModelCost {
  model: string;
  costUsd: number;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

export function addCost(scenario: string, byModel: Iterable<ModelCost>): void {
  for (const m of byModel) {
    const scenarios = spent.get(m.model) ?? new Map<string, Spent>();
    spent.set(m.model, scenarios);
    const s = scenarios.get(scenario) ?? { usd: 0, requests: 0, billedTokens: 0 };
    s.usd += m.costUsd;
    s.requests += m.requests;
    s.billedTokens += m.inputTokens + m.outputTokens + m.cacheReadInputTokens + m.cacheCreationInputTokens;
    scenarios.set(scenario, s);
  }
}

/** A run's `stats.models` (a map by model id) as a list. */
export function costsOf(models: ReadonlyMap<string, Omit<ModelCost, 'model'>>): ModelCost[] {
  return [...models].map(([model, used]) => ({ model, ...used }));
}

const usd = (n: number) => `$${n.toFixed(4)}`;

/** The figures: one line per model (its total and each scenario's share), and one per scenario. */
export function costFigures(): Record<string, string> {
  const out: Record<string, string> = {};
  const byScenario = new Map<string, number>();
  for (const [model, scenarios] of [...spent].sort(([a], [b]) => (a < b ? -1 : 1))) {
    let total = 0;
    let requests = 0;
    const parts: string[] = [];
    for (const [scenario, s] of scenarios) {
      total += s.usd;
      requests += s.requests;
      byScenario.set(scenario, (byScenario.get(scenario) ?? 0) + s.usd);
      parts.push(`${scenario} ${usd(s.usd)} (${s.requests} req, ${s.billedTokens} tok)`);
    }
    out[model] = `${usd(total)} over ${requests} requests: ${parts.join('; ')}`;
  }
  for (const [scenario, total] of byScenario) out[`scenario ${scenario}`] = usd(total);
  return out;
}

export function anyCost(): boolean {
  return spent.size > 0;
}
