import type { BrowserSession, Screenshot } from '../browser/types.js';
import type { Counters } from '../control-plane/types.js';
import { ExecutionError, errorFromSignal, isExecutionError, type ErrorCode } from '../domain/errors.js';
import type { InputFile } from '../domain/input-files.js';
import type { SchemaValidator } from '../domain/json-schema.js';
import type { SecretVault } from '../domain/secrets.js';
import type { Specification } from '../domain/specification.js';
import type {
  AssistantBlock,
  ImageBlock,
  Message,
  ModelClient,
  TextBlock,
  TokenUsage,
  ToolResultBlock,
  ToolUseBlock,
} from '../model/types.js';
import type { EventSink } from '../telemetry/types.js';
import type { ActionOutcome, ComputerToolVersion, DisplayGeometry, ExecuteComputerAction } from './action-types.js';
import { DEFAULT_CONTEXT_WINDOW, prepareMessages, type ContextWindowOptions } from './context-window.js';
import { buildSystemPrompt, CONTINUE_AFTER_MAX_TOKENS_TEXT, FIRST_USER_TEXT, NUDGE_FINISH_TEXT } from './prompt.js';
import { buildTools, COMPUTER_TOOL, FINISH_TOOL, NAVIGATE_TOOL } from './tools.js';

/**
 * The one step loop: screenshot → model turn → execute its tool calls → answer → again,
 * until `finish`, a cap, or the signal. The model client never sees the browser; the loop
 * never sees a vendor SDK.
 */

export interface AgentDeps {
  model: ModelClient;
  session: BrowserSession;
  executeAction: ExecuteComputerAction;
  events: EventSink;
  /** Each executed action, for the video's steps track and click markers. */
  onAction?: (mark: { atMs: number; label: string; point?: { x: number; y: number } }) => void;
  now?: () => number;
}

export interface AgentInput {
  spec: Specification;
  modelId: string;
  tool: { version: ComputerToolVersion; beta: string; supportsZoom: boolean };
  geometry: DisplayGeometry;
  vault: SecretVault;
  maxSteps: number;
  startUrl: string;
  validateOutput?: SchemaValidator;
  /**
   * The execution's input files (contract §12), fetched before the run: what file choosers may
   * be given, by name (BrowserSession.setInputFiles). Never show `path` to the model.
   */
  inputFiles?: readonly InputFile[];
  maxTokens?: number;
  contextWindow?: ContextWindowOptions;
  signal: AbortSignal;
}

/** Mutable tallies owned by the caller, so they survive a run that throws. */
export interface RunStats extends Counters {
  usage: TokenUsage;
}

export type AgentOutcome = { status: 'completed'; output: unknown } | { status: 'failed'; code: ErrorCode; message: string };

export function createRunStats(): RunStats {
  return {
    nSteps: 0,
    nAgentActions: 0,
    nScreenshots: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
  };
}

/** Invalid `finish` outputs the model may correct before the run fails with `output_invalid`. */
const OUTPUT_RETRIES = 1;

export async function runAgent(deps: AgentDeps, input: AgentInput, stats: RunStats): Promise<AgentOutcome> {
  const { model, session, events } = deps;
  const { signal } = input;
  const now = deps.now ?? Date.now;
  const system: TextBlock[] = [
    {
      type: 'text',
      text: buildSystemPrompt({
        spec: input.spec,
        maskedInput: input.vault.maskedPayload,
        secretPaths: input.vault.paths,
        outputSchema: input.spec.outputSchema,
        now: new Date(now()),
      }),
      cache_control: { type: 'ephemeral' },
    },
  ];
  const tools = buildTools({ toolVersion: input.tool.version, geometry: input.geometry, zoom: input.tool.supportsZoom });
  tools[tools.length - 1] = { ...tools[tools.length - 1]!, cache_control: { type: 'ephemeral' } };

  throwIfAborted(signal);
  const opened = await browserCall(() => session.navigate(input.startUrl, signal), signal);
  events.emit('navigation', { url: input.startUrl, ok: opened.ok, reason: opened.error, by: 'worker' });
  if (!opened.ok) {
    throw new ExecutionError('browser_error', `could not open the start page ${input.startUrl}: ${opened.error ?? 'unknown error'}`);
  }
  const first = await capture(input, deps, stats);
  const history: Message[] = [{ role: 'user', content: [{ type: 'text', text: FIRST_USER_TEXT }, first] }];

  let nudged = false;
  let outputRetries = 0;
  let lastResponseAt: number | undefined;

  for (;;) {
    throwIfAborted(signal);
    if (stats.nSteps >= input.maxSteps) {
      return { status: 'failed', code: 'max_steps', message: `the agent did not finish within ${input.maxSteps} steps` };
    }
    const requestAt = now();
    const response = await model.createTurn(
      {
        model: input.modelId,
        system,
        tools,
        messages: prepareMessages(history, input.contextWindow ?? DEFAULT_CONTEXT_WINDOW),
        maxTokens: input.maxTokens ?? 4096,
        betas: [input.tool.beta],
      },
      signal,
    );
    const receivedAt = now();
    stats.nSteps++;
    addUsage(stats.usage, response.usage);
    events.emit('model_turn', {
      step: stats.nSteps,
      latencyMs: receivedAt - requestAt,
      overheadMs: lastResponseAt === undefined ? null : requestAt - lastResponseAt,
      stopReason: response.stopReason,
      usage: response.usage,
      text: textOf(response.content),
      toolCalls: response.content.filter(isToolUse).map((b) => ({ id: b.id, name: b.name, input: b.input })),
    });
    lastResponseAt = receivedAt;
    history.push({ role: 'assistant', content: response.content });

    if (response.stopReason === 'refusal') {
      return { status: 'failed', code: 'agent_failed', message: 'the model refused to continue the task' };
    }

    const toolUses = response.content.filter(isToolUse);
    if (toolUses.length === 0) {
      if (response.stopReason === 'max_tokens') {
        history.push({ role: 'user', content: [{ type: 'text', text: CONTINUE_AFTER_MAX_TOKENS_TEXT }] });
        continue;
      }
      if (response.stopReason === 'pause_turn') {
        // The API paused a long turn: sending the conversation back as it is resumes it.
        continue;
      }
      if (nudged) {
        return { status: 'failed', code: 'agent_failed', message: 'the agent ended its turn twice without calling finish' };
      }
      nudged = true;
      history.push({ role: 'user', content: [{ type: 'text', text: NUDGE_FINISH_TEXT }] });
      continue;
    }

    const results: ToolResultBlock[] = [];
    let finished: AgentOutcome | undefined;
    for (const call of toolUses) {
      if (finished) {
        results.push(errorResult(call.id, 'not executed: finish was called before this tool call'));
        continue;
      }
      throwIfAborted(signal);
      if (call.name === FINISH_TOOL) {
        const verdict = handleFinish(call, input, events);
        if (verdict.kind === 'end') finished = verdict.outcome;
        else if (verdict.kind === 'retry' && outputRetries < OUTPUT_RETRIES) {
          outputRetries++;
          results.push(errorResult(call.id, verdict.error));
        } else if (verdict.kind === 'retry') {
          finished = { status: 'failed', code: 'output_invalid', message: verdict.error };
        } else results.push(errorResult(call.id, verdict.error));
        if (finished) results.push({ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'finished' }] });
        continue;
      }
      results.push(await runTool(call, input, deps, stats));
    }
    if (finished) {
      events.emit('finish', { status: finished.status, ...(finished.status === 'failed' ? { code: finished.code, reason: finished.message } : {}) });
      return finished;
    }
    history.push({ role: 'user', content: results });
  }
}

async function runTool(call: ToolUseBlock, input: AgentInput, deps: AgentDeps, stats: RunStats): Promise<ToolResultBlock> {
  const { session, events } = deps;
  const now = deps.now ?? Date.now;
  const started = now();
  if (call.name === COMPUTER_TOOL) {
    let marked = false;
    const outcome: ActionOutcome = await browserCall(
      () =>
        deps.executeAction(call.input, {
          session,
          geometry: input.geometry,
          toolVersion: input.tool.version,
          vault: input.vault,
          signal: input.signal,
          beforeRun: (planned) => {
            marked = true;
            deps.onAction?.({ atMs: now(), ...planned });
          },
        }),
      input.signal,
    );
    if (outcome.counted) stats.nAgentActions++;
    const durationMs = now() - started;
    events.emit(
      'action',
      {
        step: stats.nSteps,
        tool: COMPUTER_TOOL,
        action: outcome.action,
        input: call.input,
        ok: outcome.ok,
        ...(outcome.ok ? { text: outcome.text } : { error: outcome.error }),
        label: outcome.label,
        durationMs,
      },
      started,
    );
    // Refused actions never ran: they are marked here, on the timeline where they were refused.
    if (outcome.counted && !marked) deps.onAction?.({ atMs: started, label: outcome.label });
    if (!outcome.ok) return errorResult(call.id, outcome.error);
    const content: Array<TextBlock | ImageBlock> = [];
    if (outcome.text) content.push({ type: 'text', text: outcome.text });
    if (outcome.image) {
      stats.nScreenshots++;
      content.push(imageBlock(outcome.image));
    } else if (outcome.wantsScreenshot) {
      content.push(await capture(input, deps, stats));
    }
    if (content.length === 0) content.push({ type: 'text', text: 'done' });
    return { type: 'tool_result', tool_use_id: call.id, content };
  }

  if (call.name === NAVIGATE_TOOL) {
    stats.nAgentActions++;
    const url = readUrl(call.input);
    if (!url.ok) {
      events.emit('action', { step: stats.nSteps, tool: NAVIGATE_TOOL, input: call.input, ok: false, error: url.error, durationMs: 0 });
      return errorResult(call.id, url.error);
    }
    const result = await browserCall(() => session.navigate(url.value, input.signal), input.signal);
    const label = `navigate ${url.value}`;
    events.emit(
      'action',
      {
        step: stats.nSteps,
        tool: NAVIGATE_TOOL,
        input: call.input,
        ok: result.ok,
        ...(result.ok ? { url: result.url } : { error: result.error }),
        label,
        durationMs: now() - started,
      },
      started,
    );
    deps.onAction?.({ atMs: started, label });
    if (!result.ok) return errorResult(call.id, `navigation refused or failed: ${result.error ?? 'unknown error'}`);
    return { type: 'tool_result', tool_use_id: call.id, content: [await capture(input, deps, stats)] };
  }

  events.emit('action', { step: stats.nSteps, tool: call.name, input: call.input, ok: false, error: 'unknown tool' });
  return errorResult(call.id, `unknown tool "${call.name}": use computer, navigate or finish`);
}

type FinishVerdict = { kind: 'end'; outcome: AgentOutcome } | { kind: 'retry'; error: string } | { kind: 'bad'; error: string };

function handleFinish(call: ToolUseBlock, input: AgentInput, events: EventSink): FinishVerdict {
  const args = call.input;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { kind: 'bad', error: 'finish expects an object with "status"' };
  const { status, output, reason } = args as Record<string, unknown>;
  if (status !== 'completed' && status !== 'failed') return { kind: 'bad', error: 'finish: "status" must be "completed" or "failed"' };
  if (reason !== undefined && typeof reason !== 'string') return { kind: 'bad', error: 'finish: "reason" must be a string' };
  if (status === 'failed') {
    return { kind: 'end', outcome: { status: 'failed', code: 'agent_failed', message: reason?.trim() || 'the agent reported that it could not finish the task' } };
  }
  if (input.validateOutput) {
    const check = input.validateOutput(output);
    if (!check.ok) {
      events.emit('output_invalid', { errors: check.errors });
      return { kind: 'retry', error: `the output does not match the output schema: ${check.errors}. Call finish again with a valid output.` };
    }
  }
  return { kind: 'end', outcome: { status: 'completed', output: output ?? null } };
}

async function capture(input: AgentInput, deps: AgentDeps, stats: RunStats): Promise<ImageBlock> {
  const shot = await browserCall(async () => {
    await deps.session.settle(input.signal);
    throwIfAborted(input.signal);
    const { display, viewport } = input.geometry;
    const scaled = display.width !== viewport.width || display.height !== viewport.height;
    return deps.session.screenshot(scaled ? { outputSize: display } : undefined);
  }, input.signal);
  stats.nScreenshots++;
  return imageBlock(shot);
}

function imageBlock(shot: Screenshot): ImageBlock {
  return { type: 'image', source: { type: 'base64', media_type: shot.mediaType, data: shot.data.toString('base64') } };
}

function errorResult(id: string, message: string): ToolResultBlock {
  return { type: 'tool_result', tool_use_id: id, is_error: true, content: [{ type: 'text', text: message }] };
}

function readUrl(value: unknown): { ok: true; value: string } | { ok: false; error: string } {
  const url = value && typeof value === 'object' ? (value as Record<string, unknown>).url : undefined;
  if (typeof url !== 'string' || url.trim() === '') return { ok: false, error: 'navigate expects {"url": string}' };
  return { ok: true, value: url.trim() };
}

function isToolUse(block: AssistantBlock): block is ToolUseBlock {
  return block.type === 'tool_use';
}

function textOf(content: AssistantBlock[]): string | undefined {
  const text = content
    .filter((b): b is TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
  return text || undefined;
}

function addUsage(total: TokenUsage, turn: TokenUsage): void {
  total.inputTokens += turn.inputTokens;
  total.outputTokens += turn.outputTokens;
  total.cacheReadInputTokens += turn.cacheReadInputTokens;
  total.cacheCreationInputTokens += turn.cacheCreationInputTokens;
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw errorFromSignal(signal);
}

/**
 * Browser failures become `browser_error`, unless the run was aborted (then its reason wins).
 * An abort also ends the wait: a hung page must not hold the run past its deadline. What the
 * browser was still doing is cleaned up when the runner closes the session, right after.
 */
async function browserCall<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
  try {
    return await untilAborted(fn(), signal);
  } catch (error) {
    if (signal.aborted) throw errorFromSignal(signal);
    if (isExecutionError(error)) throw error;
    throw new ExecutionError('browser_error', `browser: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(errorFromSignal(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(errorFromSignal(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
