/**
 * The repair of one cached step (docs/run-cache.md#repair-not-restart): where the replay stops
 * because the page changed under it, the model is asked to do that step only, in a short
 * conversation of its own (repair-request.ts), with the action space's tools. Its actions run
 * like the model's (the allow-list, the input's values by name, secrets, counters), logged
 * `"by": "repair"`, and each value one of them sets is read back at once, as a replayed value is.
 * After each of its turns the repair is verified: the values the step entered were entered by
 * name (never written out as text), and the page matches an action of the earlier run that is
 * left (resume.ts): then the replay goes on there. At most REPAIR_MODEL_STEPS model steps for
 * one repair; `flow_changed`, a refusal, or no way back to the earlier run's steps ends it, and
 * the model takes the run over from there.
 */
import type { AgentDeps, AgentInput } from '../agent/types.js';
import { browserCall } from '../agent/browser-call.js';
import { enterText, enterValue, placeholderOf, placeholdersIn, type InputSource } from '../domain/input-references.js';
import { pathId, type KeyPath } from '../contract/key-path.js';
import type { ImageBlock, Message, ToolResultBlock } from '../model/types.js';
import type { ActionTrace } from '../toolset/types.js';
import { viewPage } from './page-view.js';
import { probeAction, type PreconditionContext } from './precondition.js';
import { firstMessage, FLOW_CHANGED_TOOL, notYetText, pageText, REPAIR_TOOLS, repairSystemPrompt, STEP_DONE_TOOL, type RepairBrief } from './repair-request.js';
import { holdsValue, type HoldCheck } from './replay-check.js';
import { describeElement } from './actions.js';
import { findResume, type ResumePoint } from './resume.js';
import { derivedPaths, type InputLeaf } from './values.js';
import { thinkingOf, textOf } from '../agent/response-text.js';
import type { RunCounters } from '../execution/counters.js';
import type { ModelResponse, TextBlock, ToolUseBlock } from '../contract/recording.js';

/** Model steps one repair may take before the model carries the rest of the run. */
export const REPAIR_MODEL_STEPS = 3;

export type RepairDeps = Pick<AgentDeps, 'model' | 'space' | 'session' | 'events' | 'now'>;

export interface RepairInput extends RepairBrief {
  agent: AgentInput;
  leaves: readonly InputLeaf[];
  salt: string;
  /** Input paths whose value differs from the entry's (a failed guard's reason names them). */
  changed?: readonly KeyPath[];
  /** Input paths the step entered by name: the repair must enter each by name too, or say the page no longer asks for it. */
  required: readonly KeyPath[];
  /** Model steps this repair may take (fewer when the same action was repaired before). */
  budget: number;
}

export interface RepairOutcome {
  outcome: 'resumed' | 'flow_changed' | 'gave_up';
  /** Where the replay goes on (`resumed`). */
  resume?: Extract<ResumePoint, { kind: 'at' | 'end' }>;
  /** The repair's actions that ran, by model step (steps without one left out): what the next cache keeps. */
  traces: ActionTrace[][];
  /** The labels of its actions (reads left out), in order (names, no secrets). */
  labels: string[];
  /** Model steps taken. */
  turns: number;
  /** What the model said (`step_done`'s note, `flow_changed`'s reason), or why the repair gave up. */
  note?: string;
  /** Required input paths the model said the page no longer asks for. */
  notEntered: KeyPath[];
}

/** One turn's calls as they ran. */
interface TurnCalls {
  results: ToolResultBlock[];
  traces: ActionTrace[];
  labels: string[];
  /** `step_done`, with the place of its result (answered once the step is verified or not). */
  stepDone?: { call: ToolUseBlock; note: string; index: number };
  flowChanged?: string;
}

export async function repairStep(deps: RepairDeps, input: RepairInput, stats: RunCounters): Promise<RepairOutcome> {
  const { space, session } = deps;
  const now = deps.now ?? Date.now;
  const { agent } = input;
  const { vault, signal } = agent;
  const redact = (text: string) => vault.redact(text);
  const ctx: PreconditionContext = { session, space, input: vault, leaves: input.leaves, salt: input.salt, ...(input.changed ? { changed: input.changed } : {}) };
  const system: TextBlock[] = [{ type: 'text', text: repairSystemPrompt(agent, space.guide) }];
  const tools = [...space.tools(), ...REPAIR_TOOLS];
  const history: Message[] = [];
  const outcome: RepairOutcome = { outcome: 'gave_up', traces: [], labels: [], turns: 0, notEntered: [] };
  const done: ActionTrace[] = [];
  let stepDone = false;
  const view = await viewPage(session, space, redact, { filter: 'interactive' }, signal);
  history.push({ role: 'user', content: [...firstMessage(input, view, redact), view.image] });
  for (;;) {
    if (outcome.turns >= input.budget || stats.nSteps >= agent.maxSteps) {
      outcome.note ??= outcome.turns >= input.budget ? `the model's ${outcome.turns} steps did not lead back to the earlier run's steps` : `the step cap of ${agent.maxSteps} was reached`;
      return outcome;
    }
    const response = await ask(deps, agent, { system, tools, history }, stats, now);
    outcome.turns++;
    if (response.stopReason === 'refusal') return { ...outcome, note: 'the model refused to repair the step' };
    const calls = response.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
    if (calls.length === 0) {
      if (response.stopReason === 'pause_turn') continue;
      const why = response.stopReason === 'max_tokens' ? 'your answer was cut off by the output token limit' : 'no step_done or flow_changed was called';
      history.push({ role: 'user', content: await lookAgain(deps, why, redact, signal) });
      continue;
    }
    const turn = await runCalls(deps, agent, calls, stats, now);
    if (turn.traces.length > 0) outcome.traces.push(turn.traces);
    outcome.labels.push(...turn.labels);
    done.push(...turn.traces);
    if (turn.flowChanged !== undefined) return { ...outcome, outcome: 'flow_changed', note: turn.flowChanged };
    if (turn.stepDone) {
      stepDone = true;
      outcome.note = turn.stepDone.note || undefined;
    }
    const why = valuesNotEntered(input, done, stepDone, outcome);
    const resume = why ? undefined : await findResume((cached) => probeAction(cached, ctx, signal), { steps: input.steps, stop: input.stop.at, mode: input.mode, done, stepDone });
    if (resume && resume.kind !== 'none') {
      // The conversation ends here: nothing more is asked in it.
      return { ...outcome, outcome: 'resumed', resume };
    }
    const notYet = why ?? (resume as Extract<ResumePoint, { kind: 'none' }>).reason;
    if (turn.stepDone) turn.results[turn.stepDone.index] = textResult(turn.stepDone.call, `Not done yet: ${notYet}.`, true);
    outcome.note = notYet;
    history.push({ role: 'user', content: [...turn.results, ...(await lookAgain(deps, notYet, redact, signal))] });
  }
}

/** One model step of the repair: counted as a step, its usage added, logged `"by": "repair"`, kept in the conversation. */
async function ask(deps: RepairDeps, agent: AgentInput, request: { system: TextBlock[]; tools: ReturnType<RepairDeps['space']['tools']>; history: Message[] }, stats: RunCounters, now: () => number): Promise<ModelResponse> {
  const requestAt = now();
  // Append-only: every earlier message of this repair goes again as it was.
  const response = await deps.model.createTurn(
    { model: agent.modelId, system: request.system, tools: request.tools, messages: [...request.history], maxTokens: agent.maxTokens ?? 4096, betas: [...deps.space.betas] },
    agent.signal,
  );
  const images = imagesIn(request.history.at(-1));
  if (images > 0) deps.events.notify('images_captured', { step: stats.nSteps, images });
  deps.events.emit('model_turn', {
    step: stats.nSteps + 1,
    by: 'repair',
    model: response.model,
    latencyMs: now() - requestAt,
    overheadMs: null,
    stopReason: response.stopReason,
    usage: response.usage,
    ...(response.billed ? { billed: response.billed } : {}),
    ...(thinkingOf(response.content) ? { thinking: thinkingOf(response.content)! } : {}),
    ...(textOf(response.content) ? { text: textOf(response.content)! } : {}),
    toolCalls: response.content.filter((b): b is ToolUseBlock => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, ...(b.toolset_name ? { toolset: b.toolset_name } : {}), input: b.input })),
  });
  request.history.push({ role: 'assistant', content: response.content });
  if (response.notes?.prefixMismatch) deps.events.emit('model_prefix_mismatch', { step: stats.nSteps, level: 'error', message: response.notes.prefixMismatch });
  return response;
}

/** Runs a turn's calls in order, as the agent's loop does; a failed action or a value not held halts the rest of its toolset's calls. */
async function runCalls(deps: RepairDeps, agent: AgentInput, calls: readonly ToolUseBlock[], stats: RunCounters, now: () => number): Promise<TurnCalls> {
  const { space, session, events } = deps;
  const { vault, signal } = agent;
  const turn: TurnCalls = { results: [], traces: [], labels: [] };
  const halted = new Set<string>();
  let ended = false;
  for (const call of calls) {
    if (ended) {
      turn.results.push(textResult(call, `not executed: ${turn.flowChanged !== undefined ? FLOW_CHANGED_TOOL : STEP_DONE_TOOL} was called before this tool call`, true));
      continue;
    }
    if (!call.toolset_name && call.name === FLOW_CHANGED_TOOL) {
      const reason = (call.input as { reason?: unknown } | null)?.reason;
      turn.flowChanged = vault.redact(typeof reason === 'string' && reason.trim() ? reason.trim() : 'the model found that the flow has changed');
      turn.results.push(textResult(call, 'noted', false));
      ended = true;
      continue;
    }
    if (!call.toolset_name && call.name === STEP_DONE_TOOL) {
      if (halted.size > 0) {
        turn.results.push(textResult(call, 'step_done was not taken: an earlier action in this turn failed. Look at the page now, then call step_done again.', true));
        continue;
      }
      const note = (call.input as { note?: unknown } | null)?.note;
      turn.stepDone = { call, note: vault.redact(typeof note === 'string' ? note.trim() : ''), index: turn.results.length };
      turn.results.push(textResult(call, 'noted', false));
      ended = true;
      continue;
    }
    if (!space.owns(call)) {
      turn.results.push(textResult(call, `unknown tool "${call.name}": a repair has the browser tools, ${STEP_DONE_TOOL} and ${FLOW_CHANGED_TOOL}`, true));
      if (call.toolset_name) halted.add(call.toolset_name);
      continue;
    }
    if (call.toolset_name && halted.has(call.toolset_name)) {
      turn.results.push(space.notExecuted(call));
      continue;
    }
    const startedAt = now();
    let touchedAt: number | undefined;
    const report = await browserCall(
      (cancel) =>
        space.run(call, {
          signal: cancel,
          trace: true,
          beforeRun: (planned) => {
            touchedAt ??= now();
            deps.events.notify('timeline_mark', planned, touchedAt);
          },
        }),
      signal,
    );
    if (report.counted) events.notify('action_counted', { step: stats.nSteps, action: report.action });
    if (report.images > 0) events.notify('images_captured', { step: stats.nSteps, images: report.images });
    // A value it set must be there, as a replayed one must (docs/run-cache.md#replay).
    const held = report.ok && report.trace ? await readBack(session, vault, report.trace, signal) : { ok: true as const };
    if ('read' in held && held.read) events.emit('read_back', { step: stats.nSteps, by: 'repair', ...held.read, held: held.held ?? '', ok: held.ok });
    const ok = report.ok && held.ok;
    const error = !report.ok ? report.error : !held.ok ? held.reason : undefined;
    events.emit(
      'action',
      {
        step: stats.nSteps,
        by: 'repair',
        tool: call.toolset_name ?? call.name,
        action: report.action,
        input: call.input,
        ok,
        ...(error !== undefined ? { error } : {}),
        label: report.label,
        ...(report.point ? { point: report.point } : {}),
        durationMs: now() - startedAt,
      },
      touchedAt ?? startedAt,
    );
    if (!held.ok) {
      turn.results.push({ ...report.result, is_error: true, content: [{ type: 'text', text: `${held.reason}.` }, ...report.result.content.filter((b) => b.type === 'browser_state')] });
    } else turn.results.push(report.result);
    if (!ok) {
      if (call.toolset_name) halted.add(call.toolset_name);
      continue;
    }
    if (report.trace) turn.traces.push(report.trace);
    // What the repair did, not what it read.
    if (report.counted) turn.labels.push(report.label);
  }
  return turn;
}

/** A value the repair's action set, read again from its field: form_input's target, or the focused field typed into. */
async function readBack(session: RepairDeps['session'], vault: InputSource, trace: ActionTrace, signal: AbortSignal): Promise<HoldCheck & { read?: { element: string; expected: string } }> {
  const action = trace.toolsetName ? trace.tool : String(trace.input.action ?? trace.tool);
  const shown: InputSource = { ...vault, reveal: (text) => text };
  const value = trace.input.value;
  const text = trace.input.text;
  const plan =
    action === 'form_input' && trace.target && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      ? { element: trace.target, value: enterValue(shown, value).value, how: 'set' as const }
      : action === 'type' && trace.focus && typeof text === 'string'
        ? { element: trace.focus, value: enterText(shown, text).text, how: 'typed' as const }
        : undefined;
  if (!plan) return { ok: true };
  const checked = await browserCall(async (cancel): Promise<HoldCheck> => {
    const tab = session.tab();
    if (!tab) return { ok: false as const, reason: 'the browser has no open tab' };
    // The element the value went into, by the reference the action had (docs/run-cache.md#read-back-by-identity):
    // a block whose name is its text ("Empty block…" before the keys) is not found again by that name.
    if (trace.ref) return holdsValue(tab, trace.ref, plan.value, plan.how, plan.element, cancel);
    const found = await tab.locate(plan.element, cancel);
    if (!found.ok) return { ok: false as const, reason: `the field it set could not be found again to read it back: ${found.error}` };
    return holdsValue(tab, found.value.ref, plan.value, plan.how, plan.element, cancel);
  }, signal);
  return { ...checked, read: { element: describeElement(plan.element), expected: String((plan.how === 'typed' ? text : value) ?? '') } };
}

/**
 * Why the values the step must enter are not entered as they must be, if they are not: each
 * required path entered by name by an action of the repair, or — only when the model said the
 * step is done — not entered at all (the page no longer asks for it). A value written out as text
 * is never taken for its name: the next cache would hold this input's value.
 */
export function valuesNotEntered(input: Pick<RepairInput, 'required' | 'leaves'>, done: readonly ActionTrace[], stepDone: boolean, outcome: Pick<RepairOutcome, 'notEntered'>): string | undefined {
  const entered = new Set<string>();
  const literals: string[] = [];
  for (const trace of done) {
    for (const key of ['value', 'text']) {
      const value = trace.input[key];
      if (typeof value !== 'string') continue;
      for (const ph of placeholdersIn(value)) entered.add(pathId(ph.path));
      literals.push(placeholdersIn(value).reduceRight((text, ph) => `${text.slice(0, ph.start)} ${text.slice(ph.end)}`, value));
    }
  }
  const missing = input.required.filter((path) => !entered.has(pathId(path)));
  // A value written out is wrong whatever else is: said first.
  const written = missing.find((path) => {
    const leaves = input.leaves.filter((leaf) => pathId(leaf.path) === pathId(path));
    return literals.some((text) => derivedPaths(text, leaves).length > 0);
  });
  if (written) return `${placeholderOf(written)} was written out as text: enter it by its name, ${placeholderOf(written)}`;
  if (missing.length > 0 && !stepDone) return `this step enters ${missing.map(placeholderOf).join(', ')}: enter ${missing.length === 1 ? 'it by its name' : 'them by their names'}, or call step_done if the page no longer asks for ${missing.length === 1 ? 'it' : 'them'}`;
  outcome.notEntered = missing;
  return undefined;
}

/** Another look at the page, after a turn that did not finish the step: why, then the page as it is now. */
async function lookAgain(deps: RepairDeps, why: string, redact: (text: string) => string, signal: AbortSignal): Promise<Array<TextBlock | ImageBlock>> {
  const view = await viewPage(deps.session, deps.space, redact, { filter: 'interactive' }, signal);
  return [{ type: 'text', text: `${notYetText(redact(why))}\n${pageText(view)}` }, view.image];
}

function textResult(call: ToolUseBlock, text: string, error: boolean): ToolResultBlock {
  return { type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text }], ...(error ? { is_error: true } : {}), ...(call.toolset_name ? { toolset_name: call.toolset_name } : {}) };
}

function imagesIn(message: Message | undefined): number {
  if (!message || message.role !== 'user') return 0;
  return message.content.filter((b) => b.type === 'image').length;
}


