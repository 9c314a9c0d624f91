import type { BrowserSession } from '../browser/types.js';
import type { Counters } from '../control-plane/types.js';
import { ExecutionError, errorFromSignal, isExecutionError, type ErrorCode } from '../domain/errors.js';
import type { InputFile } from '../domain/input-files.js';
import type { SchemaValidator } from '../domain/json-schema.js';
import type { SecretVault } from '../domain/secrets.js';
import type { Specification } from '../domain/specification.js';
import type { AssistantBlock, Message, ModelClient, TextBlock, TokenUsage, ToolResultBlock, ToolUseBlock } from '../model/types.js';
import type { EventSink } from '../telemetry/types.js';
import type { ActionSpace, ActionTrace } from '../toolset/types.js';
import { ASK_HUMAN_DEFINITION, ASK_HUMAN_TOOL, type AskHuman } from './ask-human.js';
import { contextOverflow, withCacheBreakpoints } from './conversation.js';
import { buildSystemPrompt, CONTINUE_AFTER_MAX_TOKENS_TEXT, FIRST_USER_TEXT, NUDGE_FINISH_TEXT } from './prompt.js';
import { FINISH_DEFINITION, FINISH_TOOL } from './tools.js';

/**
 * The one step loop: opening observation → model turn → run its tool calls → answer → again,
 * until `finish`, a cap, or the signal. What the model can do is the action space (the browser
 * toolset, the computer toolset or the earlier computer tool): the loop is the same for all.
 * The model client never sees the browser; the loop never sees a vendor SDK.
 */

export interface AgentDeps {
  model: ModelClient;
  /** What the model acts with. */
  space: ActionSpace;
  /** The browser, for the start page. */
  session: BrowserSession;
  events: EventSink;
  /** Each action about to run (or refused), for the video's steps track and click markers. */
  onAction?: (mark: { atMs: number; label: string; point?: { x: number; y: number } }) => void;
  /** Each executed action with what the run cache keeps of it. */
  onTrace?: (step: number, trace: ActionTrace) => void;
  /** Present when the run may wait for a person: the model is offered `ask_human`. */
  human?: AskHuman;
  now?: () => number;
}

export interface AgentInput {
  spec: Specification;
  modelId: string;
  vault: SecretVault;
  maxSteps: number;
  startUrl: string;
  validateOutput?: SchemaValidator;
  /**
   * The execution's input files (docs/files-and-codes.md), fetched before the run: what file choosers may
   * be given, by name (BrowserSession.setInputFiles). Never show `path` to the model.
   */
  inputFiles?: readonly InputFile[];
  maxTokens?: number;
  /** Steps already taken (a run that continues after a replay): the model learns what was done. */
  resume?: { done: string; steps: number };
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
const FINISH_AFTER_FAILURE =
  'finish was not run: an earlier action in this turn failed. Look at the page now (the failed action may have changed nothing), then call finish again.';

export async function runAgent(deps: AgentDeps, input: AgentInput, stats: RunStats): Promise<AgentOutcome> {
  const { model, space, events } = deps;
  const { signal } = input;
  const now = deps.now ?? Date.now;
  const system: TextBlock[] = [
    {
      type: 'text',
      text: buildSystemPrompt({
        spec: input.spec,
        guide: space.guide,
        maskedInput: input.vault.maskedPayload,
        secretPaths: input.vault.paths,
        oneTimeCodePaths: input.vault.oneTimeCodePaths,
        ...(input.inputFiles && input.inputFiles.length > 0 ? { inputFiles: input.inputFiles, uploadHow: space.uploadHow } : {}),
        outputSchema: input.spec.outputSchema,
        ...(deps.human ? { askHuman: { approvals: input.spec.approvals ?? [] } } : {}),
        now: new Date(now()),
      }),
      cache_control: { type: 'ephemeral' },
    },
  ];
  const tools = [...space.tools(), ...(deps.human ? [ASK_HUMAN_DEFINITION] : []), FINISH_DEFINITION];
  tools[tools.length - 1] = { ...tools[tools.length - 1]!, cache_control: { type: 'ephemeral' } };

  throwIfAborted(signal);
  if (!input.resume) {
    const opened = await browserCall(() => deps.session.navigate(input.startUrl, signal), signal);
    events.emit('navigation', { url: input.startUrl, ok: opened.ok, reason: opened.error, by: 'worker' });
    if (!opened.ok) {
      throw new ExecutionError('browser_error', `could not open the start page ${input.startUrl}: ${opened.error ?? 'unknown error'}`);
    }
  }
  // A run that takes over a replay sees the page as a read shows it (docs/run-cache.md#replay).
  const first = await browserCall(() => space.opening(signal, input.resume ? { brief: true } : undefined), signal);
  stats.nScreenshots += first.filter((b) => b.type === 'image').length;
  const opening = input.resume
    ? `${input.resume.done}\nContinue the task from here. This is the browser now.`
    : FIRST_USER_TEXT;
  const history: Message[] = [{ role: 'user', content: [{ type: 'text', text: opening }, ...first] }];

  let nudged = false;
  let outputRetries = 0;
  let lastResponseAt: number | undefined;
  /** Set once a turn used most of a context the API does not manage: the run ends before the next request. */
  let overflow: string | undefined;

  for (;;) {
    throwIfAborted(signal);
    if (stats.nSteps >= input.maxSteps) {
      return { status: 'failed', code: 'max_steps', message: `the agent did not finish within ${input.maxSteps} steps` };
    }
    if (overflow) return { status: 'failed', code: 'model_error', message: overflow };
    const requestAt = now();
    const response = await model.createTurn(
      {
        model: input.modelId,
        system,
        tools,
        // Append-only (docs/model.md#conversation-rules): every earlier turn goes again as it was.
        messages: withCacheBreakpoints(history),
        maxTokens: input.maxTokens ?? 4096,
        betas: [...space.betas],
      },
      signal,
    );
    const receivedAt = now();
    stats.nSteps++;
    addUsage(stats.usage, response.usage);
    events.emit('model_turn', {
      step: stats.nSteps,
      by: 'model',
      latencyMs: receivedAt - requestAt,
      overheadMs: lastResponseAt === undefined ? null : requestAt - lastResponseAt,
      stopReason: response.stopReason,
      usage: response.usage,
      ...(response.notes?.clearedInputTokens ? { clearedInputTokens: response.notes.clearedInputTokens } : {}),
      thinking: thinkingOf(response.content),
      text: textOf(response.content),
      toolCalls: response.content.filter(isToolUse).map((b) => ({ id: b.id, name: b.name, ...(b.toolset_name ? { toolset: b.toolset_name } : {}), input: b.input })),
    });
    lastResponseAt = receivedAt;
    history.push({ role: 'assistant', content: response.content });
    if (response.notes?.prefixMismatch) {
      events.emit('model_prefix_mismatch', { step: stats.nSteps, level: 'error', message: response.notes.prefixMismatch });
    }
    // Checked before the next request: this turn's calls (a finish among them) still run.
    overflow = contextOverflow(response);

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
    /** Toolsets with a failed call in this turn: the rest of their calls are not run (the documented rule). */
    const halted = new Set<string>();
    /** The last successful result that may carry an observation, and whether anything changed the page since. */
    let observable: ToolResultBlock | undefined;
    let changedSinceImage = false;
    let finished: AgentOutcome | undefined;
    for (const call of toolUses) {
      if (finished) {
        results.push(errorResult(call, 'not executed: finish was called before this tool call'));
        continue;
      }
      throwIfAborted(signal);
      if (call.name === FINISH_TOOL && !call.toolset_name) {
        if (halted.size > 0) {
          results.push(errorResult(call, FINISH_AFTER_FAILURE));
          continue;
        }
        const verdict = handleFinish(call, input, events);
        if (verdict.kind === 'end') finished = verdict.outcome;
        else if (verdict.kind === 'retry' && outputRetries < OUTPUT_RETRIES) {
          outputRetries++;
          results.push(errorResult(call, verdict.error));
        } else if (verdict.kind === 'retry') {
          finished = { status: 'failed', code: 'output_invalid', message: verdict.error };
        } else results.push(errorResult(call, verdict.error));
        if (finished) results.push({ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'finished' }] });
        continue;
      }
      if (deps.human && call.name === ASK_HUMAN_TOOL && !call.toolset_name) {
        // Not an agent action: the model's turn is the step, the person's answer its result.
        const asked = await deps.human.handle(call, stats.nSteps, signal);
        stats.nScreenshots += asked.images;
        results.push(asked.result);
        continue;
      }
      if (!space.owns(call)) {
        events.emit('action', { step: stats.nSteps, tool: call.toolset_name ?? call.name, action: call.name, input: call.input, ok: false, error: 'unknown tool' });
        results.push(errorResult(call, `unknown tool "${call.name}"${call.toolset_name ? ` of toolset "${call.toolset_name}"` : ''}`));
        if (call.toolset_name) halted.add(call.toolset_name);
        continue;
      }
      if (call.toolset_name && halted.has(call.toolset_name)) {
        results.push(space.notExecuted(call));
        events.emit('action', { step: stats.nSteps, tool: call.toolset_name, action: call.name, input: call.input, ok: false, error: 'not executed: an earlier action in this turn failed' });
        continue;
      }
      const startedAt = now();
      // The action's time is when it touched the page (its marker on the video), not when the
      // worker began to look up its target: the log, the steps track and the video agree.
      let touchedAt: number | undefined;
      const report = await browserCall(
        () =>
          space.run(call, {
            signal,
            trace: deps.onTrace !== undefined,
            beforeRun: (planned) => {
              touchedAt ??= now();
              deps.onAction?.({ atMs: touchedAt, ...planned });
            },
          }),
        signal,
      );
      if (report.counted) stats.nAgentActions++;
      stats.nScreenshots += report.images;
      events.emit(
        'action',
        {
          step: stats.nSteps,
          by: 'model',
          tool: call.toolset_name ?? call.name,
          action: report.action,
          input: call.input,
          ok: report.ok,
          ...(report.ok ? { text: resultText(report.result) } : { error: report.error }),
          label: report.label,
          ...(report.point ? { point: report.point } : {}),
          durationMs: now() - startedAt,
        },
        touchedAt ?? startedAt,
      );
      if (report.ok && report.trace) deps.onTrace?.(stats.nSteps, report.trace);
      results.push(report.result);
      if (!report.ok) {
        if (call.toolset_name) halted.add(call.toolset_name);
        continue;
      }
      // An image taken by the call shows the page after it; otherwise an action leaves it unseen.
      if (report.images > 0) changedSinceImage = false;
      else if (report.changesPage) changedSinceImage = true;
      if (!isStateOnly(report.result)) observable = report.result;
    }
    if (finished?.status === 'failed' && finished.code === 'agent_failed' && deps.human?.denied) finished = { ...finished, code: 'approval_denied' };
    if (finished) {
      events.emit('finish', { status: finished.status, ...(finished.status === 'failed' ? { code: finished.code, reason: finished.message } : {}) });
      return finished;
    }
    // The computer toolset answers actions with text: one look at the page after the turn saves
    // the model a screenshot call.
    if (space.observe && observable && changedSinceImage) {
      const shot = await browserCall(() => space.observe!(signal), signal);
      observable.content.push(shot);
      stats.nScreenshots++;
    }
    history.push({ role: 'user', content: results });
  }
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

/** A result made of the browser_state block alone (a tab member's): no room for anything else. */
function isStateOnly(result: ToolResultBlock): boolean {
  return result.content.length > 0 && result.content.every((b) => b.type === 'browser_state');
}

/** The text of a result, for the log (page reads can be long: the log keeps their start). */
function resultText(result: ToolResultBlock): string | undefined {
  const text = result.content
    .filter((b): b is TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
  if (!text) return undefined;
  return text.length > 2_000 ? `${text.slice(0, 2_000)}… (${text.length} characters)` : text;
}

function errorResult(call: ToolUseBlock, message: string): ToolResultBlock {
  return {
    type: 'tool_result',
    tool_use_id: call.id,
    is_error: true,
    content: [{ type: 'text', text: message }],
    ...(call.toolset_name ? { toolset_name: call.toolset_name } : {}),
  };
}

function isToolUse(block: AssistantBlock): block is ToolUseBlock {
  return block.type === 'tool_use';
}

/** The thinking the model showed (its summary): why it acted, for the step timeline. */
function thinkingOf(content: AssistantBlock[]): string | undefined {
  const text = content
    .map((b) => (b.type === 'thinking' ? (b as { thinking?: unknown }).thinking : undefined))
    .filter((t): t is string => typeof t === 'string')
    .join('\n')
    .trim();
  return text || undefined;
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
 * The call gets the run's signal: on abort the browser ports stop what they were doing for it
 * (docs/action-spaces.md#cancellation) and reject at once, so a hung page cannot hold the run
 * past its deadline, and nothing of the call is left running in the browser.
 */
export async function browserCall<T>(fn: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
  try {
    throwIfAborted(signal);
    const value = await fn(signal);
    // An action space answers a cancelled call as a failed action: the run is over all the same.
    throwIfAborted(signal);
    return value;
  } catch (error) {
    if (signal.aborted) throw errorFromSignal(signal);
    if (isExecutionError(error)) throw error;
    throw new ExecutionError('browser_error', `browser: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
