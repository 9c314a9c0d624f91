/**
 * One model turn's tool calls, run in order (docs/action-spaces.md): `finish`, `ask_human`, and
 * the action space's calls. A failed call halts the rest of its toolset's calls in the turn; a
 * `finish` ends the batch. Each call answers with a tool result, run or not.
 */
import type { ExecutionEventSink } from '../execution/events.js';
import type { ToolResultBlock } from '../model/types.js';
import { errorFromSignal } from '../contract/errors.js';
import type { AskHuman } from './ask-human.js';
import { ASK_HUMAN_TOOL } from './ask-human.js';
import { browserCall } from './browser-call.js';
import type { AgentInput, AgentRun } from './types.js';
import { stuckText } from './stuck-loop.js';
import { FINISH_TOOL } from './tools.js';
import type { AgentOutcome } from '../execution/outcome.js';
import type { TextBlock, ToolUseBlock } from '../contract/recording.js';

/** What the calls need of the run: its deps, input and counters, and the invalid outputs it let the model correct. */
export type CallContext = Pick<AgentRun, 'deps' | 'input' | 'counters' | 'now' | 'outputRetries' | 'repeats'>;

/** A turn's calls as they run: the answers so far, and what they leave for the loop. */
export interface CallBatch {
  results: ToolResultBlock[];
  /** Toolsets with a failed call in this turn: the rest of their calls are not run (the documented rule). */
  halted: Set<string>;
  /** The last successful result that may carry an observation. */
  observable?: ToolResultBlock;
  /** Whether anything changed the page since the last image a call took. */
  changedSinceImage: boolean;
  /** Set by `finish` (or an output that stays invalid): the run ends after this turn. */
  finished?: AgentOutcome;
  /** Set at the fifth identical action on an unchanged page (stuck-loop.ts): the run ends with `agent_stuck`. */
  stuck?: AgentOutcome;
}

/** Invalid `finish` outputs the model may correct before the run fails with `output_invalid`. */
const OUTPUT_RETRIES = 1;
const FINISH_AFTER_FAILURE =
  'finish was not run: an earlier action in this turn failed. Look at the page now (the failed action may have changed nothing), then call finish again.';

export async function runToolCalls(run: CallContext, calls: readonly ToolUseBlock[]): Promise<CallBatch> {
  const batch: CallBatch = { results: [], halted: new Set(), changedSinceImage: false };
  for (const call of calls) {
    if (batch.finished) {
      batch.results.push(errorResult(call, 'not executed: finish was called before this tool call'));
      continue;
    }
    // The run ends with this turn: nothing more of it is done.
    if (batch.stuck) {
      batch.results.push(errorResult(call, 'not executed: the run was stopped (the same action on an unchanged page)'));
      continue;
    }
    if (run.input.signal.aborted) throw errorFromSignal(run.input.signal);
    await runCall(run, call, batch);
  }
  return batch;
}

async function runCall(run: CallContext, call: ToolUseBlock, batch: CallBatch): Promise<void> {
  const { human, space } = run.deps;
  if (call.name === FINISH_TOOL && !call.toolset_name) return finishCall(run, call, batch);
  if (human && call.name === ASK_HUMAN_TOOL && !call.toolset_name) return askHumanCall(run, human, call, batch);
  if (!space.owns(call)) return unknownCall(run, call, batch);
  if (call.toolset_name && batch.halted.has(call.toolset_name)) return haltedCall(run, call, batch);
  return actionCall(run, call, batch);
}

async function finishCall(run: CallContext, call: ToolUseBlock, batch: CallBatch): Promise<void> {
  if (batch.halted.size > 0) {
    batch.results.push(errorResult(call, FINISH_AFTER_FAILURE));
    return;
  }
  const verdict = await handleFinish(call, run.input, run.deps.events);
  if (verdict.kind === 'end') batch.finished = verdict.outcome;
  else if (verdict.kind === 'retry' && run.outputRetries < OUTPUT_RETRIES) {
    run.outputRetries++;
    batch.results.push(errorResult(call, verdict.error));
  } else if (verdict.kind === 'retry') {
    batch.finished = { status: 'failed', code: 'output_invalid', message: verdict.error };
  } else batch.results.push(errorResult(call, verdict.error));
  if (batch.finished) batch.results.push({ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'finished' }] });
}

/** Not an agent action: the model's turn is the step, the person's answer its result. */
async function askHumanCall(run: CallContext, human: AskHuman, call: ToolUseBlock, batch: CallBatch): Promise<void> {
  const step = run.counters.nSteps;
  const asked = await human.handle(call, step, run.input.signal);
  if (asked.images > 0) run.deps.events.notify('images_captured', { step, images: asked.images });
  batch.results.push(asked.result);
}

function unknownCall(run: CallContext, call: ToolUseBlock, batch: CallBatch): void {
  run.deps.events.emit('action', { step: run.counters.nSteps, tool: call.toolset_name ?? call.name, action: call.name, input: call.input, ok: false, error: 'unknown tool' });
  batch.results.push(errorResult(call, `unknown tool "${call.name}"${call.toolset_name ? ` of toolset "${call.toolset_name}"` : ''}`));
  if (call.toolset_name) batch.halted.add(call.toolset_name);
}

function haltedCall(run: CallContext, call: ToolUseBlock, batch: CallBatch): void {
  batch.results.push(run.deps.space.notExecuted(call));
  run.deps.events.emit('action', { step: run.counters.nSteps, tool: call.toolset_name ?? call.name, action: call.name, input: call.input, ok: false, error: 'not executed: an earlier action in this turn failed' });
}

async function actionCall(run: CallContext, call: ToolUseBlock, batch: CallBatch): Promise<void> {
  const { deps, now } = run;
  const { signal } = run.input;
  const step = run.counters.nSteps;
  const startedAt = now();
  // The action's time is when it touched the page (its marker on the video), not when the
  // worker began to look up its target: the log, the steps track and the video agree.
  let touchedAt: number | undefined;
  const report = await browserCall(
    () =>
      deps.space.run(call, {
        signal,
        // The trace's page reads are paid for only while something keeps them (the run cache).
        trace: deps.events.hasSubscribers('action_trace'),
        beforeRun: (planned) => {
          touchedAt ??= now();
          deps.events.notify('timeline_mark', planned, touchedAt);
        },
      }),
    signal,
  );
  if (report.counted) deps.events.notify('action_counted', { step, action: report.action });
  if (report.images > 0) deps.events.notify('images_captured', { step, images: report.images });
  deps.events.emit(
    'action',
    {
      step,
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
  if (report.ok && report.trace) deps.events.notify('action_trace', { step, trace: report.trace });
  const repeat = await run.repeats.after(call, report, signal);
  if (repeat.kind !== 'go') {
    deps.events.emit('repeated_action', { step, tool: call.toolset_name ?? call.name, action: report.action, label: report.label, repeats: repeat.repeats, outcome: repeat.kind === 'stop' ? 'stopped' : 'warned' });
    if (repeat.kind === 'stop') {
      batch.stuck = { status: 'failed', code: 'agent_stuck', message: `the agent made the same action (${report.label}) ${repeat.repeats} times in a row on a page that did not change` };
      batch.results.push(report.result);
      return;
    }
    // Answered as an error: the rest of the turn's calls of its toolset are not run, as after any failed call.
    batch.results.push(stuckResult(report.result, repeat.repeats));
    if (call.toolset_name) batch.halted.add(call.toolset_name);
    return;
  }
  batch.results.push(report.result);
  if (!report.ok) {
    if (call.toolset_name) batch.halted.add(call.toolset_name);
    return;
  }
  // An image taken by the call shows the page after it; otherwise an action leaves it unseen.
  if (report.images > 0) batch.changedSinceImage = false;
  else if (report.changesPage) batch.changedSinceImage = true;
  if (!isStateOnly(report.result)) batch.observable = report.result;
}

type FinishVerdict = { kind: 'end'; outcome: AgentOutcome } | { kind: 'retry'; error: string } | { kind: 'bad'; error: string };

async function handleFinish(call: ToolUseBlock, input: AgentInput, events: ExecutionEventSink): Promise<FinishVerdict> {
  const args = call.input;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { kind: 'bad', error: 'finish expects an object with "status"' };
  const { status, output, reason } = args as Record<string, unknown>;
  if (status !== 'completed' && status !== 'failed') return { kind: 'bad', error: 'finish: "status" must be "completed" or "failed"' };
  if (reason !== undefined && typeof reason !== 'string') return { kind: 'bad', error: 'finish: "reason" must be a string' };
  if (status === 'failed') {
    return { kind: 'end', outcome: { status: 'failed', code: 'agent_failed', message: reason?.trim() || 'the agent reported that it could not finish the task' } };
  }
  if (input.validateOutput) {
    const check = await input.validateOutput(output);
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

/** The action's own result, said to be an error, with why first: what it shows (a screenshot) is kept. */
function stuckResult(result: ToolResultBlock, repeats: number): ToolResultBlock {
  return { ...result, is_error: true, content: [{ type: 'text', text: stuckText(repeats) }, ...result.content] };
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
