import type { BetaContextManagementConfig, BetaThinkingConfigParam } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { ModelCapabilities } from './capabilities.js';

/**
 * How a run's context stays bounded while the conversation stays append-only
 * (docs/model.md#context-settings): the API clears old tool results and compacts a very long
 * conversation on its side; the worker never edits an earlier turn.
 */
export interface ContextSettings {
  /** Old tool results are cleared once a request holds this many input tokens. */
  clearTriggerTokens: number;
  /** The newest tool uses whose results are never cleared. */
  keepToolUses: number;
  /**
   * A clearing removes at least this many tokens, else none: each clearing re-writes the prompt
   * cache from the first cleared result on, so it must save enough to pay for that.
   */
  clearAtLeastTokens: number;
  /** The conversation is summarised by the API once a request holds this many input tokens. */
  compactTriggerTokens: number;
}

/** Chosen by `npm run bench` (bench/tokens.ts): see docs/model.md#context-settings for the figures. */
export const DEFAULT_CONTEXT_SETTINGS: ContextSettings = {
  clearTriggerTokens: 20_000,
  keepToolUses: 3,
  clearAtLeastTokens: 12_000,
  compactTriggerTokens: 100_000,
};

export const CONTEXT_MANAGEMENT_BETA = 'context-management-2025-06-27';
export const COMPACT_BETA = 'compact-2026-01-12';
export const THINKING_BINDING_BETA = 'thinking-binding-controls-2026-08-01';

export interface ContextParams {
  context_management?: BetaContextManagementConfig;
  thinking?: BetaThinkingConfigParam;
  betas: string[];
}

/**
 * The request fields that follow from the model's capabilities. `dropBlock` is the safety net
 * after a prefix-check refusal: the API drops the thinking blocks it cannot bind instead of
 * refusing the request.
 */
export function contextParams(caps: ModelCapabilities, settings: ContextSettings, dropBlock = false): ContextParams {
  const out: ContextParams = { betas: [] };
  const edits: NonNullable<BetaContextManagementConfig['edits']> = [];
  if (caps.clearToolUses) {
    edits.push({
      type: 'clear_tool_uses_20250919',
      trigger: { type: 'input_tokens', value: settings.clearTriggerTokens },
      keep: { type: 'tool_uses', value: settings.keepToolUses },
      clear_at_least: { type: 'input_tokens', value: settings.clearAtLeastTokens },
      // The calls stay: the model keeps the record of what it did, only old observations go.
      clear_tool_inputs: false,
    });
  }
  if (caps.compact) {
    edits.push({ type: 'compact_20260112', trigger: { type: 'input_tokens', value: settings.compactTriggerTokens } });
    out.betas.push(COMPACT_BETA);
  }
  if (edits.length > 0) {
    out.context_management = { edits };
    out.betas.unshift(CONTEXT_MANAGEMENT_BETA);
  }
  // A refused prefix only happens on a model with preserved thinking, which thinks adaptively.
  if (caps.adaptiveThinking || dropBlock) {
    out.thinking = { type: 'adaptive', display: 'summarized', ...(dropBlock ? { block_binding: { prefix_mismatch_behavior: 'drop_block' } } : {}) };
  }
  if (dropBlock) out.betas.push(THINKING_BINDING_BETA);
  return out;
}

/** Whether the API keeps this model's context bounded on its side. */
export function isManaged(caps: ModelCapabilities): boolean {
  return caps.clearToolUses || caps.compact;
}

/** A 400 of the prefix check: "The block is bound to a different conversation." */
export function isPrefixMismatch(message: string): boolean {
  return /bound to a different conversation|prefix_mismatch_behavior/i.test(message);
}
