import { errorFromSignal } from '../contract/errors.js';
import { ASK_HUMAN_DEFINITION } from './ask-human.js';
import { browserCall } from './browser-call.js';
import { contextOverflow, withCacheBreakpoints } from './conversation.js';
import { buildSystemPrompt, CONTINUE_AFTER_MAX_TOKENS_TEXT, FIRST_USER_TEXT, NUDGE_FINISH_TEXT } from './prompt.js';
import { openStartPage } from './start-page.js';
import { createRepeatWatch } from './stuck-loop.js';
import { runToolCalls, type CallBatch } from './tool-calls.js';
import { FINISH_DEFINITION } from './tools.js';
import type { RunCounters } from '../execution/counters.js';
import type { AgentOutcome } from '../execution/outcome.js';
import type { AgentDeps, AgentInput, AgentRun } from './types.js';
import { thinkingOf, textOf } from './response-text.js';
import type { AssistantBlock, ModelResponse, TextBlock, ToolUseBlock } from '../contract/recording.js';

/**
 * The one step loop: open the start page and observe it, then turn after turn: check the caps,
 * ask the model, handle a turn without tool calls (its stop reason), run the tool calls
 * (tool-calls.ts), answer them; until `finish`, a cap, or the signal. What the model can do is
 * the action space (the browser toolset, the computer toolset or the earlier computer tool):
 * the loop is the same for all.
 * The model client never sees the browser; the loop never sees a vendor SDK.
 */

const REFUSED: AgentOutcome = { status: 'failed', code: 'agent_failed', message: 'the model refused to continue the task' };

export async function runAgent(deps: AgentDeps, input: AgentInput, counters: RunCounters): Promise<AgentOutcome> {
  const run = prepareRun(deps, input, counters);
  throwIfAborted(input.signal);
  if (!input.resume) await openStartPage(deps.session, input.startUrl, deps.events, input.signal);
  await observeOpening(run);
  for (;;) {
    throwIfAborted(input.signal);
    const capped = capReached(run);
    if (capped) return capped;
    const response = await askModel(run);
    if (response.stopReason === 'refusal') return { ...REFUSED };
    const calls = response.content.filter(isToolUse);
    if (calls.length === 0) {
      const ended = withoutCalls(run, response.stopReason);
      if (ended) return ended;
      continue;
    }
    const batch = await runToolCalls(run, calls);
    if (batch.finished) return endRun(run, batch.finished);
    if (batch.stuck) return batch.stuck;
    await answer(run, batch);
  }
}

/** The system prompt and the tools, the same in every request of the run. */
function prepareRun(deps: AgentDeps, input: AgentInput, counters: RunCounters): AgentRun {
  const { space } = deps;
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
        ...(input.budget ? { budget: input.budget } : {}),
        now: new Date(now()),
      }),
      cache_control: { type: 'ephemeral' },
    },
  ];
  const tools = [...space.tools(), ...(deps.human ? [ASK_HUMAN_DEFINITION] : []), FINISH_DEFINITION];
  tools[tools.length - 1] = { ...tools[tools.length - 1]!, cache_control: { type: 'ephemeral' } };
  return { deps, input, counters, now, system, tools, history: [], nudged: false, outputRetries: 0, repeats: createRepeatWatch(deps.session) };
}

/** The first user message: the task (or what a replay did) and the page as it is. */
async function observeOpening(run: AgentRun): Promise<void> {
  const { space } = run.deps;
  const { resume, signal } = run.input;
  // A run that takes over a replay sees the page as a read shows it (docs/run-cache.md#replay).
  const first = await browserCall(() => space.opening(signal, resume ? { brief: true } : undefined), signal);
  tellImages(run, first.filter((b) => b.type === 'image').length);
  const opening = resume ? `${resume.done}\nContinue the task from here. This is the browser now.` : FIRST_USER_TEXT;
  run.history.push({ role: 'user', content: [{ type: 'text', text: opening }, ...first] });
}

/** The step cap, or a context about to overflow: the run ends before another request. */
function capReached(run: AgentRun): AgentOutcome | undefined {
  if (run.counters.nSteps >= run.input.maxSteps) {
    return { status: 'failed', code: 'max_steps', message: `the agent did not finish within ${run.input.maxSteps} steps` };
  }
  if (run.overflow) return { status: 'failed', code: 'model_error', message: run.overflow };
  return undefined;
}

/** One model turn: counted as a step, logged, and kept in the conversation. */
async function askModel(run: AgentRun): Promise<ModelResponse> {
  const { deps, input, now } = run;
  const requestAt = now();
  const response = await deps.model.createTurn(
    {
      model: input.modelId,
      system: run.system,
      tools: run.tools,
      // Append-only (docs/model.md#conversation-rules): every earlier turn goes again as it was.
      messages: withCacheBreakpoints(run.history),
      maxTokens: input.maxTokens ?? 4096,
      betas: [...deps.space.betas],
    },
    input.signal,
  );
  const receivedAt = now();
  // The step this turn is: counted when its `model_turn` is told.
  const step = run.counters.nSteps + 1;
  deps.events.emit('model_turn', {
    step,
    by: 'model',
    model: response.model,
    latencyMs: receivedAt - requestAt,
    overheadMs: run.lastResponseAt === undefined ? null : requestAt - run.lastResponseAt,
    stopReason: response.stopReason,
    usage: response.usage,
    ...(response.billed ? { billed: response.billed } : {}),
    ...(response.notes?.clearedInputTokens ? { clearedInputTokens: response.notes.clearedInputTokens } : {}),
    thinking: thinkingOf(response.content),
    text: textOf(response.content),
    toolCalls: response.content.filter(isToolUse).map((b) => ({ id: b.id, name: b.name, ...(b.toolset_name ? { toolset: b.toolset_name } : {}), input: b.input })),
  });
  run.lastResponseAt = receivedAt;
  run.history.push({ role: 'assistant', content: response.content });
  if (response.notes?.prefixMismatch) {
    deps.events.emit('model_prefix_mismatch', { step, level: 'error', message: response.notes.prefixMismatch });
  }
  // Checked before the next request: this turn's calls (a finish among them) still run.
  run.overflow = contextOverflow(response);
  return response;
}

/** A turn without tool calls: continue a cut turn, resume a paused one, or nudge to finish once. */
function withoutCalls(run: AgentRun, stopReason: ModelResponse['stopReason']): AgentOutcome | undefined {
  if (stopReason === 'max_tokens') {
    run.history.push({ role: 'user', content: [{ type: 'text', text: CONTINUE_AFTER_MAX_TOKENS_TEXT }] });
    return undefined;
  }
  // The API paused a long turn: sending the conversation back as it is resumes it.
  if (stopReason === 'pause_turn') return undefined;
  if (run.nudged) return { status: 'failed', code: 'agent_failed', message: 'the agent ended its turn twice without calling finish' };
  run.nudged = true;
  run.history.push({ role: 'user', content: [{ type: 'text', text: NUDGE_FINISH_TEXT }] });
  return undefined;
}

/** The outcome `finish` gave; a failure after a person denied an approval is theirs. */
function endRun(run: AgentRun, finished: AgentOutcome): AgentOutcome {
  const outcome: AgentOutcome = finished.status === 'failed' && finished.code === 'agent_failed' && run.deps.human?.denied ? { ...finished, code: 'approval_denied' } : finished;
  run.deps.events.emit('finish', { status: outcome.status, ...(outcome.status === 'failed' ? { code: outcome.code, reason: outcome.message } : {}) });
  return outcome;
}

/** The turn's results as the next user message, with one look at the page where it changed unseen. */
async function answer(run: AgentRun, batch: CallBatch): Promise<void> {
  const { space } = run.deps;
  const { signal } = run.input;
  // The computer toolset answers actions with text: one look at the page after the turn saves
  // the model a screenshot call.
  if (space.observe && batch.observable && batch.changedSinceImage) {
    const shot = await browserCall(() => space.observe!(signal), signal);
    batch.observable.content.push(shot);
    tellImages(run, 1);
  }
  run.history.push({ role: 'user', content: batch.results });
}

/** Images captured for the model, for the counters. */
function tellImages(run: AgentRun, images: number): void {
  if (images > 0) run.deps.events.notify('images_captured', { step: run.counters.nSteps, images });
}

function isToolUse(block: AssistantBlock): block is ToolUseBlock {
  return block.type === 'tool_use';
}



function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw errorFromSignal(signal);
}
