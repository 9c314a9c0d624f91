import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type {
  BetaBrowserStateBlockParam,
  BetaContentBlock,
  BetaContentBlockParam,
  BetaImageBlockParam,
  BetaMessage,
  BetaMessageParam,
  BetaTextBlockParam,
  BetaToolUnion,
  MessageCreateParamsNonStreaming,
} from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { ExecutionError } from '../contract/errors.js';
import type { Logger } from '../telemetry/types.js';
import { mayForceToolChoice } from './tool-choice.js';
import { fromApiUsage } from './api-usage.js';
import { createCapabilityLookup, type CapabilityOverrides, type ModelCapabilities } from './capabilities.js';
import { contextParams, DEFAULT_CONTEXT_SETTINGS, isManaged, isPrefixMismatch, type ContextSettings } from './context-policy.js';
import { taskBudgetParams } from './task-budget.js';
import type { ImageBlock, Message, ModelClient, ModelTurnRequest, ToolDefinition, ToolResultContent, UserBlock } from './types.js';
import type { AssistantBlock, ModelResponse, TextBlock, TurnNotes, ToolUseBlock } from '../contract/recording.js';

/**
 * The real model: one `beta.messages.create` call per turn. The request is the loop's, sent as
 * it is (append-only), plus what the model's capabilities call for: the API's context
 * management and summarized thinking (docs/model.md). Capabilities are asked of the Models API
 * once per model id per process.
 *
 * Retries are the SDK's own (verified in @anthropic-ai/sdk 1.x `client.js`): it retries
 * connection errors, timeouts, 408, 409, 429 and every status ≥ 500 (so 529 "overloaded"
 * too), waits what `retry-after-ms` or `retry-after` (seconds or HTTP date) asks, else an
 * exponential backoff from 0.5 s to 8 s with jitter, and never retries other 4xx. After
 * `maxRetries` it throws, and we turn that into `model_error`.
 */

export interface AnthropicModelOptions {
  /** Secret. Never logged. Falls back to the SDK's own `ANTHROPIC_API_KEY` lookup. */
  apiKey?: string;
  baseURL?: string;
  /** Retries of one turn on transient failures before `model_error`. */
  maxRetries: number;
  /** Cap on one HTTP attempt. Default 10 minutes (the SDK's non-streaming ceiling). */
  timeoutMs?: number;
  logger: Logger;
  /** Capabilities an operator sets for a proxy that serves no Models API (ANTHROPIC_MODEL_CAPABILITIES). */
  capabilityOverrides?: CapabilityOverrides;
  /** Cap on the one Models API call per model id. Default 5 s; then the table answers. */
  modelsTimeoutMs?: number;
  /** The context management settings (the benchmark compares others). */
  contextSettings?: ContextSettings;
}

const DEFAULT_TIMEOUT_MS = 600_000;
const DEFAULT_MODELS_TIMEOUT_MS = 5_000;

export function createAnthropicModel(opts: AnthropicModelOptions): ModelClient {
  const logger = opts.logger.child({ component: 'anthropic' });
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = new Anthropic({
    apiKey: opts.apiKey,
    baseURL: opts.baseURL,
    maxRetries: opts.maxRetries,
    // Always explicit: without it the SDK derives a timeout from max_tokens and refuses large
    // non-streaming requests outright.
    timeout: timeoutMs,
    fetch: observedFetch(logger),
    // The worker makes each request's span itself, from the run's events, with the GenAI
    // conventions (docs/operations.md#traces): the SDK's own spans would count each request twice,
    // and could carry prompt content past the worker's redaction.
    openTelemetry: false,
    // Only the SDK's warnings and errors, through our logger; its debug level would dump
    // request details we do not want in the process log.
    logLevel: 'warn',
    logger: sdkLogger(logger),
  });

  const settings = opts.contextSettings ?? DEFAULT_CONTEXT_SETTINGS;
  const capabilities = createCapabilityLookup({
    retrieve: (model, signal) => client.models.retrieve(model, {}, { signal, maxRetries: 0 }),
    timeoutMs: opts.modelsTimeoutMs ?? DEFAULT_MODELS_TIMEOUT_MS,
    ...(opts.capabilityOverrides ? { overrides: opts.capabilityOverrides } : {}),
    onFallback: (model, error) =>
      logger.warn({ model, err: error }, 'the Models API did not answer: the model table gives the capabilities'),
  });

  const send = (request: ModelTurnRequest, caps: ModelCapabilities, dropBlock: boolean, signal: AbortSignal) =>
    client.beta.messages.create(toParams(request, caps, settings, dropBlock), { signal });

  return {
    async createTurn(request: ModelTurnRequest, signal: AbortSignal): Promise<ModelResponse> {
      if (signal.aborted) throw signal.reason;
      const { capabilities: caps, source } = await capabilities(request.model);
      const notes: TurnNotes = { context: { managed: isManaged(caps), maxInputTokens: caps.maxInputTokens } };
      let message: BetaMessage;
      try {
        message = await send(request, caps, false, signal);
      } catch (error) {
        // Whatever the SDK made of it, an abort from outside is the caller's reason.
        if (signal.aborted) throw signal.reason;
        const refused = prefixRefusal(error);
        if (refused === undefined) throw toModelError(error, opts.maxRetries);
        // The safety net (docs/model.md#conversation-rules): our requests are append-only, so
        // this is a bug to fix, but the run goes on without the blocks the API cannot bind.
        logger.error({ model: request.model, capabilities: source, detail: refused }, 'the API refused a thinking block prefix: sent again with drop_block');
        notes.prefixMismatch = refused;
        try {
          message = await send(request, caps, true, signal);
        } catch (retryError) {
          if (signal.aborted) throw signal.reason;
          throw toModelError(retryError, opts.maxRetries);
        }
      }
      return fromMessage(message, request.model, notes);
    },
  };
}

/** The API's message when the error is the prefix check's 400, else undefined. */
function prefixRefusal(error: unknown): string | undefined {
  if (!(error instanceof APIError) || error.status !== 400) return undefined;
  const detail = apiErrorDetail(error);
  return isPrefixMismatch(detail) ? detail : undefined;
}

/** Wraps fetch to log each failed attempt: the SDK retries silently otherwise. */
function observedFetch(logger: Logger): typeof fetch {
  return async (input, init) => {
    const attempt = Number(new Headers(init?.headers).get('x-stainless-retry-count') ?? '0');
    const response = await fetch(input, init);
    if (!response.ok) {
      logger.warn(
        {
          status: response.status,
          attempt,
          retryAfter: response.headers.get('retry-after') ?? undefined,
          requestId: response.headers.get('request-id') ?? undefined,
        },
        'model API answered with an error',
      );
    }
    return response;
  };
}

function sdkLogger(logger: Logger) {
  const format = (message: string, rest: unknown[]) => ({ sdk: true, details: rest.length ? rest.map(String) : undefined, msg: message });
  return {
    error: (message: string, ...rest: unknown[]) => logger.error(format(message, rest), 'anthropic sdk error'),
    warn: (message: string, ...rest: unknown[]) => logger.warn(format(message, rest), 'anthropic sdk warning'),
    info: (message: string, ...rest: unknown[]) => logger.debug(format(message, rest), 'anthropic sdk info'),
    debug: (message: string, ...rest: unknown[]) => logger.debug(format(message, rest), 'anthropic sdk debug'),
  };
}

function toModelError(error: unknown, maxRetries: number): ExecutionError {
  const retries = `after ${maxRetries} ${maxRetries === 1 ? 'retry' : 'retries'}`;
  if (error instanceof APIUserAbortError) {
    return new ExecutionError('model_error', 'the model request was aborted', { cause: error });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new ExecutionError('model_error', `the model API timed out ${retries}`, { cause: error });
  }
  if (error instanceof APIConnectionError) {
    const reason = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return new ExecutionError('model_error', `could not reach the model API ${retries}${reason}`, { cause: error });
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const transient = error.status === 408 || error.status === 409 || error.status === 429 || error.status >= 500;
    const detail = apiErrorDetail(error);
    const when = transient ? ` ${retries}` : '';
    return new ExecutionError('model_error', `the model API returned status ${error.status}${when}: ${detail}`, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ExecutionError('model_error', `the model request failed: ${message}`, { cause: error });
}

/** `{type, message}` of the API's error body when it has one, else the SDK's message. */
function apiErrorDetail(error: APIError): string {
  const body = error.error as { error?: { type?: unknown; message?: unknown } } | undefined;
  const inner = body?.error;
  if (inner && typeof inner.message === 'string') {
    return typeof inner.type === 'string' ? `${inner.type}: ${inner.message}` : inner.message;
  }
  return error.message;
}

// ---- request mapping: our wire-shaped types → the SDK's ----

function toParams(request: ModelTurnRequest, caps: ModelCapabilities, settings: ContextSettings, dropBlock: boolean): MessageCreateParamsNonStreaming {
  const context = contextParams(caps, settings, dropBlock);
  const budget = taskBudgetParams(caps, request.taskBudget);
  const params: MessageCreateParamsNonStreaming = {
    model: request.model,
    max_tokens: request.maxTokens,
    system: request.system.map(toTextParam),
    messages: request.messages.map(toMessageParam),
  };
  if (request.tools.length > 0) params.tools = request.tools.map(toTool);
  if (context.context_management) params.context_management = context.context_management;
  if (context.thinking) params.thinking = context.thinking;
  // A forced tool choice goes only where the API takes it (tool-choice.ts): with thinking on, or
  // on a model that refuses it, the request goes without, and its answer is read for the call.
  if (request.toolChoice && mayForceToolChoice(request.model, context.thinking !== undefined)) params.tool_choice = { type: 'tool', name: request.toolChoice.name };
  if (budget.output_config) params.output_config = budget.output_config;
  const betas = [...new Set([...request.betas, ...context.betas, ...budget.betas])];
  if (betas.length > 0) params.betas = betas;
  return params;
}

function toTextParam(block: TextBlock): BetaTextBlockParam {
  const out: BetaTextBlockParam = { type: 'text', text: block.text };
  if (block.cache_control) out.cache_control = { type: 'ephemeral' };
  return out;
}

function toTool(tool: ToolDefinition): BetaToolUnion {
  if (!('type' in tool)) {
    return {
      name: tool.name,
      description: tool.description,
      input_schema: { ...tool.input_schema, type: 'object' },
      ...(tool.cache_control ? { cache_control: { type: 'ephemeral' as const } } : {}),
    };
  }
  const cache = tool.cache_control ? { cache_control: { type: 'ephemeral' as const } } : {};
  if (tool.type === 'browser_toolset_20260801' || tool.type === 'computer_toolset_20260801') {
    const entry = { ...(tool.configs ? { configs: structuredClone(tool.configs) } : {}), ...cache };
    return tool.type === 'browser_toolset_20260801' ? { type: 'browser_toolset_20260801', ...entry } : { type: 'computer_toolset_20260801', ...entry };
  }
  const computer = tool as Extract<ToolDefinition, { name: 'computer' }>;
  const base = { name: 'computer' as const, display_width_px: computer.display_width_px, display_height_px: computer.display_height_px, ...cache };
  if (computer.type === 'computer_20251124') {
    return { ...base, type: 'computer_20251124', ...(computer.enable_zoom !== undefined ? { enable_zoom: computer.enable_zoom } : {}) };
  }
  return { ...base, type: 'computer_20250124' };
}

function toMessageParam(message: Message): BetaMessageParam {
  if (message.role === 'user') return { role: 'user', content: message.content.map(toUserBlock) };
  return { role: 'assistant', content: message.content.map(toAssistantParam) };
}

function toUserBlock(block: UserBlock): BetaContentBlockParam {
  switch (block.type) {
    case 'text':
    case 'image':
      return toMediaParam(block);
    case 'tool_result':
      return {
        type: 'tool_result',
        tool_use_id: block.tool_use_id,
        content: block.content.map(toResultContent),
        ...(block.is_error !== undefined ? { is_error: block.is_error } : {}),
        ...(block.toolset_name !== undefined ? { toolset_name: block.toolset_name } : {}),
        ...(block.cache_control ? { cache_control: { type: 'ephemeral' as const } } : {}),
      };
  }
}

function toResultContent(block: ToolResultContent): BetaTextBlockParam | BetaImageBlockParam | BetaBrowserStateBlockParam {
  if (block.type !== 'browser_state') return toMediaParam(block);
  return {
    type: 'browser_state',
    tabs: block.tabs.map((tab) => ({ ...tab })),
    // The state changes go back as the toolset reported them; our type keeps each one open
    // (`type` and any fields), which the SDK's closed union cannot express: the cast says so.
    ...(block.state_changes ? { state_changes: structuredClone(block.state_changes) as unknown as BetaBrowserStateBlockParam['state_changes'] } : {}),
    ...(block.cache_control ? { cache_control: { type: 'ephemeral' as const } } : {}),
  };
}

function toMediaParam(block: TextBlock | ImageBlock): BetaTextBlockParam | BetaImageBlockParam {
  if (block.type === 'text') return toTextParam(block);
  return {
    type: 'image',
    source: { type: 'base64', media_type: block.source.media_type, data: block.source.data },
    ...(block.cache_control ? { cache_control: { type: 'ephemeral' as const } } : {}),
  };
}

function toAssistantParam(block: AssistantBlock): BetaContentBlockParam {
  if (block.type === 'text' && typeof (block as { text?: unknown }).text === 'string') return toTextParam(block as TextBlock);
  if (block.type === 'tool_use') {
    const use = block as ToolUseBlock;
    // A toolset member's call goes back with its toolset_name, as the API sent it.
    return { type: 'tool_use', id: use.id, name: use.name, input: use.input, ...(use.toolset_name ? { toolset_name: use.toolset_name } : {}) } as BetaContentBlockParam;
  }
  // thinking, redacted_thinking and whatever else the model sent: back verbatim, as the API
  // requires (thinking blocks carry a signature it checks). The block is the API's own, read
  // from its answer (contract/recording.ts keeps it whole); no SDK type names "a block you sent".
  return block as unknown as BetaContentBlockParam;
}

// ---- response mapping: the SDK's → ours ----

function fromMessage(message: BetaMessage, requestModel: string, notes: TurnNotes): ModelResponse {
  const cleared = (message.context_management?.applied_edits ?? []).reduce((sum, edit) => sum + (edit.cleared_input_tokens ?? 0), 0);
  if (cleared > 0) notes.clearedInputTokens = cleared;
  return {
    id: message.id,
    model: message.model,
    content: message.content.map(fromContentBlock),
    stopReason: message.stop_reason ?? 'end_turn',
    ...fromApiUsage(message.usage, requestModel),
    notes,
  };
}

function fromContentBlock(block: BetaContentBlock): AssistantBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input, ...(block.toolset_name ? { toolset_name: block.toolset_name } : {}) };
    default:
      // A plain JSON copy, so that what we record is exactly what we will send back.
      return JSON.parse(JSON.stringify(block)) as AssistantBlock;
  }
}
