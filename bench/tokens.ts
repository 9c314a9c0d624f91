/**
 * Input tokens of 100-turn runs on every current model, in both action spaces: the real loop and
 * the real Anthropic client against the scripted model server, which applies the API's rules
 * (prefix check, tool versions) and counts tokens with the request's context management and a
 * prompt cache applied (test/support/fake-api-tokens.ts). The conversation is append-only; the
 * API's clearing of old tool results keeps each request bounded.
 *
 * Billed input = uncached + 0.1 × cache reads + 1.25 × cache writes (the API's prices relative
 * to an uncached token). `BENCH_SWEEP=1` also compares context settings on one model (how the
 * defaults in src/model/context-policy.ts were chosen).
 */
import { DEFAULT_CONTEXT_SETTINGS, type ContextSettings } from '../src/model/context-policy.js';
import { longRun, type LongRun } from '../test/support/long-run.js';
import { addCost, costsOf } from './cost.js';

const MODELS = ['claude-fable-5-2', 'claude-mythos-5-1', 'claude-opus-5-5', 'claude-sonnet-5-5', 'claude-haiku-5-5', 'claude-sonnet-5'];
const TURNS = 100;

function figures(run: LongRun) {
  const { inputTokens, cacheReadInputTokens, cacheCreationInputTokens } = run.stats.usage;
  const sent = run.requestTokens.reduce((a, b) => a + b, 0);
  return {
    ok: run.outcome.status === 'completed' && run.server.refusals.length === 0,
    refusals: run.server.refusals.length,
    sent,
    billed: Math.round(inputTokens + 0.1 * cacheReadInputTokens + 1.25 * cacheCreationInputTokens),
    last: run.requestTokens[run.requestTokens.length - 1] ?? 0,
    peak: Math.max(0, ...run.requestTokens),
    cacheRead: cacheReadInputTokens,
    costUsd: run.stats.costUsd,
  };
}

export async function benchTokens(): Promise<Record<string, number | string>> {
  const out: Record<string, number | string> = {};
  let worstLast = 0;
  for (const space of ['computer', 'browser'] as const) {
    for (const model of MODELS) {
      const run = await longRun({ model, space, turns: TURNS });
      addCost(`tokens ${space}`, costsOf(run.stats.models));
      const f = figures(run);
      worstLast = Math.max(worstLast, f.last);
      out[`${space} ${model}`] = `${f.ok ? 'completed' : `FAILED (${f.refusals} refused)`}; input sent ${f.sent}, billed ${f.billed}, last ${f.last}, peak ${f.peak}, cache reads ${f.cacheRead}, cost $${f.costUsd.toFixed(4)}`;
    }
  }
  out['largest last request (tokens)'] = worstLast;
  if (process.env.BENCH_SWEEP === '1') Object.assign(out, await sweep());
  return out;
}

/** Context settings compared on Opus 5.5 in both spaces: billed input, and the largest request. */
async function sweep(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const candidates: ContextSettings[] = [];
  for (const clearTriggerTokens of [20_000, 30_000, 45_000]) {
    for (const keepToolUses of [3, 4, 6]) {
      for (const clearAtLeastTokens of [5_000, 12_000, 20_000]) candidates.push({ ...DEFAULT_CONTEXT_SETTINGS, clearTriggerTokens, keepToolUses, clearAtLeastTokens });
    }
  }
  for (const settings of candidates) {
    const runs = await Promise.all((['computer', 'browser'] as const).map((space) => longRun({ model: 'claude-opus-5-5', space, turns: TURNS, contextSettings: settings })));
    const [c, b] = runs.map(figures);
    out[`sweep trigger ${settings.clearTriggerTokens} keep ${settings.keepToolUses} at least ${settings.clearAtLeastTokens}`] =
      `billed ${c!.billed + b!.billed} (computer ${c!.billed}, browser ${b!.billed}), peak ${Math.max(c!.peak, b!.peak)}`;
  }
  return out;
}
