import { isToolsetType } from '../domain/action-spaces.js';
import { tableTaskBudget } from './task-budget.js';
import { modelTools } from './tool-versions.js';

/**
 * What a model can do with its context (docs/model.md#how-a-new-model-is-picked-up): learned
 * from the Models API once per process, else from an operator's override, else from the table.
 * The computer-use tool version and the browser toolset stay in tool-versions.ts: the Models
 * API does not say them.
 */
export interface ModelCapabilities {
  /** Server-side clearing of old tool results (`clear_tool_uses_20250919`). */
  clearToolUses: boolean;
  /** Server-side compaction of a long conversation (`compact_20260112`). */
  compact: boolean;
  /** Adaptive thinking is accepted: the worker then asks for its summary (`display: "summarized"`). */
  adaptiveThinking: boolean;
  /** The model's context window, in input tokens. */
  maxInputTokens: number;
  /** The API's task budget is accepted (`output_config.task_budget`: docs/model.md#task-budgets). The Models API does not say it: the table does. */
  taskBudget: boolean;
}

export type CapabilitySource = 'models-api' | 'override' | 'table';

/** An operator's override, by model id or `*` for every model (ANTHROPIC_MODEL_CAPABILITIES). */
export type CapabilityOverrides = Record<string, Partial<ModelCapabilities>>;

/** The subset of the Models API's answer we read (`GET /v1/models/{id}`). */
export interface ModelInfoLike {
  max_input_tokens?: number | null;
  capabilities?: {
    context_management?: {
      supported?: boolean;
      clear_tool_uses_20250919?: { supported?: boolean } | null;
      compact_20260112?: { supported?: boolean } | null;
    } | null;
    thinking?: { supported?: boolean; types?: { adaptive?: { supported?: boolean } | null } | null } | null;
  } | null;
}

const FABLE_MYTHOS = /^claude-(fable|mythos)-/;

/**
 * The table's answer. Every model that takes the toolsets (Opus 4.8 and later, and any id the
 * table does not know: the newest generation's rules) has tool-result clearing, compaction and
 * adaptive thinking; the Claude 4 models before them have tool-result clearing only; Claude 3
 * models have none. Fable and Mythos have a 1M-token window; 200k is what every other model has
 * at least.
 */
export function tableCapabilities(model: string): ModelCapabilities {
  const id = model.trim().toLowerCase();
  const tools = modelTools(id);
  const maxInputTokens = FABLE_MYTHOS.test(id) ? 1_000_000 : 200_000;
  const taskBudget = tableTaskBudget(id);
  if (isToolsetType(tools.computer.type) || tools.browser !== 'no') {
    return { clearToolUses: true, compact: true, adaptiveThinking: true, maxInputTokens, taskBudget };
  }
  if (id.startsWith('claude-3-')) return { clearToolUses: false, compact: false, adaptiveThinking: false, maxInputTokens, taskBudget };
  return { clearToolUses: true, compact: false, adaptiveThinking: false, maxInputTokens, taskBudget };
}

/** The Models API's answer in our terms; what it leaves out comes from the table. */
export function fromModelInfo(info: ModelInfoLike, fallback: ModelCapabilities): ModelCapabilities {
  const caps = info.capabilities;
  if (!caps) return { ...fallback, maxInputTokens: info.max_input_tokens ?? fallback.maxInputTokens };
  const cm = caps.context_management;
  const managed = cm?.supported === true;
  return {
    clearToolUses: managed && cm?.clear_tool_uses_20250919?.supported === true,
    compact: managed && cm?.compact_20260112?.supported === true,
    adaptiveThinking: caps.thinking?.supported === true && caps.thinking.types?.adaptive?.supported === true,
    maxInputTokens: info.max_input_tokens ?? fallback.maxInputTokens,
    // The Models API has no field for it (docs/model.md#task-budgets): the table's answer stands.
    taskBudget: fallback.taskBudget,
  };
}

export interface CapabilityLookupOptions {
  /** Asks the Models API; rejects on failure or when `signal` fires. */
  retrieve(model: string, signal: AbortSignal): Promise<ModelInfoLike>;
  overrides?: CapabilityOverrides;
  /** How long the one Models API call may take before the table answers. */
  timeoutMs: number;
  onFallback?: (model: string, error: unknown) => void;
}

export type CapabilityLookup = (model: string) => Promise<{ capabilities: ModelCapabilities; source: CapabilitySource }>;

/**
 * One answer per model id per process. An override for the id (or `*`) is used without asking
 * the API, for a proxy that serves no Models API; a failed or slow call falls back to the table
 * and is not asked again.
 */
export function createCapabilityLookup(opts: CapabilityLookupOptions): CapabilityLookup {
  const cache = new Map<string, ReturnType<CapabilityLookup>>();
  return (model) => {
    const known = cache.get(model);
    if (known) return known;
    const answer = (async () => {
      const table = tableCapabilities(model);
      const override = opts.overrides?.[model] ?? opts.overrides?.['*'];
      if (override) return { capabilities: { ...table, ...override }, source: 'override' as const };
      try {
        const info = await opts.retrieve(model, AbortSignal.timeout(opts.timeoutMs));
        return { capabilities: fromModelInfo(info, table), source: 'models-api' as const };
      } catch (error) {
        opts.onFallback?.(model, error);
        return { capabilities: table, source: 'table' as const };
      }
    })();
    cache.set(model, answer);
    return answer;
  };
}
