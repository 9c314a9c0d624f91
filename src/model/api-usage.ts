import type { BetaIterationsUsage, BetaUsage } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { sameFamily } from './tool-versions.js';
import type { BilledIteration, ModelResponse, TokenUsage } from '../contract/recording.js';

/**
 * The API's `usage` as the worker counts it (docs/model.md#prices). The top-level fields are the
 * answer's own sampling; when the API itemises a request in `usage.iterations`, each entry is one
 * sampling with its own tokens, and the entries together are what the request was billed. A
 * `compaction` entry (the API summarising the conversation, `compact_20260112`) is in none of the
 * top-level fields, so a worker reading only those would count a fraction of a compacting request.
 * The `message` entries are the top level itemised: the sum is taken over the entries alone, never
 * entries plus top level.
 */
export function fromApiUsage(usage: BetaUsage, requestModel: string): Pick<ModelResponse, 'usage' | 'billed'> {
  const answer = tokens(usage);
  const iterations = usage.iterations ?? [];
  if (iterations.length === 0) return { usage: answer };
  return { usage: answer, billed: iterations.map((entry) => fromIteration(entry, requestModel)) };
}

type Iteration = BetaIterationsUsage[number];

function fromIteration(entry: Iteration, requestModel: string): BilledIteration {
  const model = 'model' in entry && typeof entry.model === 'string' ? entry.model : undefined;
  // The request's own model (or a dated id of its family) is left implicit, so its tokens stay in
  // one row of output.json's byModel; another model (an advisor, a fallback) is priced as itself.
  const other = model !== undefined && !sameFamily(model.trim().toLowerCase(), requestModel.trim().toLowerCase());
  return { type: entry.type, ...(other ? { model } : {}), usage: tokens(entry) };
}

function tokens(usage: Pick<BetaUsage, 'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens'>): TokenUsage {
  return {
    inputTokens: usage.input_tokens ?? 0,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadInputTokens: usage.cache_read_input_tokens ?? 0,
    cacheCreationInputTokens: usage.cache_creation_input_tokens ?? 0,
  };
}
