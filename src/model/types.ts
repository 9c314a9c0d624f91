/**
 * The model port. One call is one model turn. Shapes follow the Messages API's JSON (so a
 * recording is the wire format) but are our own types: vendor SDK types stay in the adapter.
 */
import type { SingleComputerToolType, ToolsetType } from '../domain/action-spaces.js';

export interface CacheControl {
  type: 'ephemeral';
}

export interface TextBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
}

export interface ImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: 'image/png' | 'image/jpeg' | 'image/webp'; data: string };
  cache_control?: CacheControl;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
  /** Set on a call to a member of a client toolset (`browser`, `computer`); `name` is the member. */
  toolset_name?: string;
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

/** Blocks we do not interpret (thinking, redacted_thinking, …) are passed back verbatim. */
export interface OpaqueBlock {
  type: 'thinking' | 'redacted_thinking' | (string & {});
  [key: string]: unknown;
}

export type AssistantBlock = TextBlock | ToolUseBlock | OpaqueBlock;
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

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'pause_turn' | (string & {});

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

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
  source: 'table' | 'configured' | 'fallback';
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

export interface ModelResponse {
  id: string;
  model: string;
  content: AssistantBlock[];
  stopReason: StopReason;
  usage: TokenUsage;
  /** What the client and the API did around this turn (absent in recordings made before it existed). */
  notes?: TurnNotes;
}

/** docs/model.md#conversation-rules */
export interface TurnNotes {
  /** The context the request ran in: whether the API keeps it bounded, and the model's window. */
  context?: { managed: boolean; maxInputTokens: number };
  /** Input tokens the API's context management cleared from this request. */
  clearedInputTokens?: number;
  /** The API refused a thinking block's prefix; the request was sent again with `drop_block`. */
  prefixMismatch?: string;
}

export interface ModelClient {
  /**
   * Runs one turn. Retries transient failures itself (429, 529, 5xx, network, honouring
   * `retry-after`), then throws `ExecutionError('model_error')`. Rejects with the signal's
   * reason when aborted.
   */
  createTurn(request: ModelTurnRequest, signal: AbortSignal): Promise<ModelResponse>;
}

/** `recording.json` (docs/counters-and-artifacts.md#artifacts, docs/operations.md#replaying-a-recording): enough to replay a run with no model. */
export interface RecordingFile {
  format: 'execution-worker/recording@1';
  model: string;
  /** The action space's tool type (`browser_toolset_20260801`, `computer_toolset_20260801`, `computer_20251124`, …). */
  toolVersion: string;
  display: { width: number; height: number };
  turns: RecordedTurn[];
}

export interface RecordedTurn {
  /** Milliseconds the model took for this turn. */
  latencyMs: number;
  response: ModelResponse;
}
