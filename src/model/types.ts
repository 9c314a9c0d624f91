/**
 * The model port. One call is one model turn. Shapes follow the Messages API's JSON (so a
 * recording is the wire format) but are our own types: vendor SDK types stay in the adapter.
 */
import type { PriceSource } from '../contract/output.js';
import type { AssistantBlock, CacheControl, ModelResponse, TextBlock, TokenUsage } from '../contract/recording.js';
import type { SingleComputerToolType, ToolsetType } from '../domain/action-spaces.js';

export interface ImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: 'image/png' | 'image/jpeg' | 'image/webp'; data: string };
  cache_control?: CacheControl;
}

/** The browser toolset's report of the tabs after a call, carried in its tool results. */
export interface BrowserStateBlock {
  type: 'browser_state';
  tabs: Array<{ tab_id: string; title: string; url: string; active?: boolean }>;
  state_changes?: Array<{ type: string; [key: string]: unknown }>;
  cache_control?: CacheControl;
}

export type ToolResultContent = TextBlock | ImageBlock | BrowserStateBlock;

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: ToolResultContent[];
  is_error?: boolean;
  /** Echoes the call's `toolset_name` (the API requires it on every member result). */
  toolset_name?: string;
  cache_control?: CacheControl;
}

export type UserBlock = TextBlock | ImageBlock | ToolResultBlock;

export type Message =
  | { role: 'user'; content: UserBlock[] }
  | { role: 'assistant'; content: AssistantBlock[] };

/** Per-member switches of a client toolset entry. */
export type ToolsetConfigs = Record<string, { enabled?: boolean }>;

/** A tool as declared to the model: the computer tool's typed form, a client toolset, or a custom tool. */
export type ToolDefinition =
  | {
      type: SingleComputerToolType;
      name: 'computer';
      display_width_px: number;
      display_height_px: number;
      enable_zoom?: boolean;
      cache_control?: CacheControl;
    }
  | {
      type: ToolsetType;
      configs?: ToolsetConfigs;
      cache_control?: CacheControl;
    }
  | {
      name: string;
      description: string;
      input_schema: Record<string, unknown>;
      cache_control?: CacheControl;
    };

export interface ModelTurnRequest {
  model: string;
  system: TextBlock[];
  tools: ToolDefinition[];
  messages: Message[];
  maxTokens: number;
  /** Beta flags for the request (e.g. `computer-use-2025-11-24`); the toolsets need none. */
  betas: string[];
  /**
   * The tool the answer must call. Sent only where the API allows it: never with thinking on
   * (the API refuses a forced tool choice then), so the caller still checks what was called.
   */
  toolChoice?: { type: 'tool'; name: string };
  /** The run's token budget and what is left of it; sent as the API's task budget where the model takes one. */
  taskBudget?: TaskBudget;
}

/** `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`, `pause_turn`, or one the API adds. */
export type StopReason = ModelResponse['stopReason'];

/** USD per million tokens of each kind the API bills (docs/model.md#prices). */
export interface TokenPrices {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok: number;
  /** The 5-minute cache's write price (the worker's breakpoints are `ephemeral`). */
  cacheWritePerMTok: number;
}

/** What one request of a model cost, and where its prices came from. */
export interface PricedUsage {
  usd: number;
  /** `table`: the worker's price table; `configured`: MODEL_PRICES; `fallback`: an id neither knows. */
  source: PriceSource;
}

/** Prices a request's usage by its model (the price table and MODEL_PRICES: docs/model.md#prices). */
export interface ModelPricing {
  price(model: string, usage: TokenUsage): PricedUsage;
}

/**
 * The run's token budget as a request carries it (docs/model.md#task-budgets): the whole and
 * what is left. The client sends it as the API's task budget where the model takes one.
 */
export interface TaskBudget {
  total: number;
  remaining: number;
}

export interface ModelClient {
  /**
   * Runs one turn. Retries transient failures itself (429, 529, 5xx, network, honouring
   * `retry-after`), then throws `ExecutionError('model_error')`. Rejects with the signal's
   * reason when aborted.
   */
  createTurn(request: ModelTurnRequest, signal: AbortSignal): Promise<ModelResponse>;
}

/**
 * One stage of a run's model pipeline (runner/model-pipeline.ts): it gets each request with the
 * rest of the pipeline as `next`, and may look at the request, change it, refuse it (throw), or
 * look at the response. The recording, the meter and the stage that tells the images a request
 * shows are interceptors.
 */
export type ModelInterceptor = (request: ModelTurnRequest, signal: AbortSignal, next: ModelClient['createTurn']) => Promise<ModelResponse>;

