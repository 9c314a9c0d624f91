/**
 * Replays a workflow version's cached run (docs/run-cache.md#replay) with no model: step by step,
 * each action only once its precondition holds on the page as it is now (precondition.ts). The
 * action then runs through the action space like the model's would (the allow-list, the input's
 * values put in by name, settling, the video), and a value it set is read back.
 * At the first precondition that fails, action that fails, or value not held, the replay stops
 * and says where, why and what kind of stop it is, naming the element the cached run acted on:
 * the model repairs that step (repair.ts) or takes over from there. A replay begins at the first
 * step, past the steps a signed-in page is already past, or at the action a repair led back to.
 */
import type { BrowserSession, ElementIdentity } from '../browser/types.js';
import type { InputSource } from '../domain/input-references.js';
import { valueAt, type KeyPath } from '../contract/key-path.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { ActionSpace, ActionTrace } from '../toolset/types.js';
import { browserCall } from '../agent/browser-call.js';
import { readState } from '../domain/element-state.js';
import { actionOf, describeElement, SETS_VALUE, SKIPPED, type ActionAt } from './actions.js';
import { decideEffect } from './effects.js';
import { pageShape, samePage } from './format.js';
import { checkAction, describeAction, prepare, type MissKind } from './precondition.js';
import { holdsValue } from './replay-check.js';
import { resolveSources, type MissingPiece } from './sources.js';
import type { InputLeaf } from './values.js';
import type { RunCounters } from '../execution/counters.js';
import type { CachedAction } from '../contract/run-cache.js';

export interface ReplayInput {
  steps: CachedAction[][];
  /** The new input: its values by name, entered by the action space as the model's would be. */
  input: InputSource;
  /** The new input's values the model would see (no secrets), for the guards. */
  leaves: readonly InputLeaf[];
  /** The entry's fingerprint: the salt of its guards' digests. */
  salt: string;
  /** Input paths whose value differs from the entry's (a failed guard's reason names them). */
  changed?: readonly KeyPath[];
  maxSteps: number;
  /** Where the replay hands over at the latest, and why: before this action (docs/run-cache.md#values-the-earlier-run-never-entered). */
  handOver?: ActionAt & { reason: string };
  /** Where to begin (a repair led back there); absent: the first step, or the first step of this page when it is past the first ones. */
  from?: ActionAt;
  signal: AbortSignal;
}

export interface ReplayDeps {
  space: ActionSpace;
  session: BrowserSession;
  /** Its lines, and each action's moment on the video's timeline as it touches the page. */
  events: ExecutionEventSink;
  now?: () => number;
}

/**
 * What stopped a replay: a precondition (MissKind: the page or element not there, a changed
 * value it may depend on, no value in the new input, an action never replayed), the action
 * failed, the field did not hold the value (`not_held`), the values the earlier run never
 * entered are due (`hand_over`), or the step cap.
 */
export type StopKind = MissKind | 'failed' | 'not_held' | 'hand_over' | 'step_cap';

export interface ReplayStop {
  /** The cached step (1-based) the replay stopped in. */
  atStep: number;
  /** The cached action it stopped at (from 0): not run, or run and not done (it failed, its value was not held). */
  at: ActionAt;
  kind: StopKind;
  reason: string;
  /** The cached action it did not run, as the earlier run did it (its element as that run saw it). */
  next?: string;
}

export interface ReplayResult {
  /** Steps of the run made of replayed actions: cached steps, or the part of one before a stop or after a resume. */
  replayed: number;
  /** Where the replay stopped; absent when it ran to the last cached step. */
  stopped?: ReplayStop;
  /** The replayed actions' labels by step of the run, for the model if it takes over (names, no secrets). */
  done: string[][];
  /** The cached steps before the one the replay began at (the page was already past them): kept for the next cache. */
  skipped: CachedAction[][];
  /** What the new cache keeps of the replayed actions, by step of the run. */
  traces: ActionTrace[][];
  /** Each value the replay entered, as its field was read back (the final check's evidence). */
  readBacks: ReadBack[];
  /** Pieces of a value the earlier run entered one by one that the new input does not have: their actions were passed over. */
  piecesSkipped: MissingPiece[];
}

/** A value the replay entered, read back from its field: the cached step (1-based), the element, what it shows. */
export interface ReadBack {
  atStep: number;
  element: string;
  /** What the field shows now (a secret as its name); `checked`/`unchecked` for a box. */
  value: string;
}

export async function replaySteps(deps: ReplayDeps, input: ReplayInput, stats: RunCounters): Promise<ReplayResult> {
  const { space, session, events } = deps;
  const now = deps.now ?? Date.now;
  const from = input.from ?? { step: startingStep(input.steps, pageShape(session.currentUrl()), input.input), action: 0 };
  const result: ReplayResult = { replayed: 0, done: [], traces: [], readBacks: [], piecesSkipped: [], skipped: input.from ? [] : input.steps.slice(0, from.step) };
  if (!input.from && from.step > 0) {
    events.emit('replay_started_later', { step: stats.nSteps, cachedStep: from.step + 1, skipped: from.step, reason: `the page is already past step${from.step > 1 ? `s 1–${from.step}` : ' 1'}` });
  }
  // A hand-over in the steps passed over happens where the replay begins.
  const handOver = input.handOver && before(input.handOver, from) ? { ...input.handOver, ...from } : input.handOver;
  const ctx = { session, space, input: input.input, leaves: input.leaves, salt: input.salt, ...(input.changed ? { changed: input.changed } : {}) };
  let n = 0;
  for (let index = from.step; index < input.steps.length; index++) {
    const step = input.steps[index]!;
    const atStep = index + 1;
    const labels: string[] = [];
    const traces: ActionTrace[] = [];
    // A step run to its end is a step of the run; so is the part of one that ran before a stop.
    const close = (whole: boolean) => {
      if (!whole && labels.length === 0) return;
      result.replayed++;
      result.traces.push(traces);
      result.done.push(labels);
      events.emit('replayed_step', { step: stats.nSteps + 1, by: 'cache', actions: traces.length });
    };
    const stop = (at: number, kind: StopKind, reason: string): ReplayResult => {
      close(false);
      const cached = step[at];
      const next = cached ? describeAction(cached) : undefined;
      events.emit('replay_stopped', { step: stats.nSteps, cachedStep: atStep, reason, ...(next ? { next } : {}) });
      return { ...result, stopped: { atStep, at: { step: index, action: at }, kind, reason, ...(next ? { next } : {}) } };
    };
    const first = index === from.step ? from.action : 0;
    if (stats.nSteps >= input.maxSteps) return stop(first, 'step_cap', `the step cap of ${input.maxSteps} was reached`);
    for (let at = first; at < step.length; at++) {
      const cached = step[at]!;
      input.signal.throwIfAborted();
      if (handOver && handOver.step === index && handOver.action === at) return stop(at, 'hand_over', handOver.reason);
      if (SKIPPED.has(actionOf(cached))) continue;
      // A piece (a paragraph) the new input does not have is not entered: passed over, and told to the final check.
      const pieces = resolveSources(cached.input, cached.sources, input.input.maskedPayload);
      if (!pieces.ok && pieces.piece && samePage(cached.page, pageShape(session.currentUrl()))) {
        result.piecesSkipped.push(pieces.piece);
        continue;
      }
      const checked = checkAction(cached, ctx);
      if (!checked.holds) return stop(at, checked.kind, checked.reason);
      // The first action after a repair may find the focus where the repair left it.
      const resuming = input.from !== undefined && index === input.from.step && at === input.from.action;
      const call = await browserCall((signal) => prepare(cached, ctx, ++n, signal, resuming ? 'resume' : 'run'), input.signal);
      if (!call.ok) return stop(at, 'absent', call.reason);
      // The state the action brings about (effects.ts): passed over when it holds, repaired when
      // the element is in neither the state the earlier run found nor the one it left.
      if (cached.effect && call.value.ref) {
        const tab = session.tab();
        const ref = call.value.ref;
        const now = tab ? await browserCall((signal) => readState(tab, ref, signal), input.signal) : undefined;
        const decided = decideEffect(cached.effect, now, describeElement(cached.target));
        if (decided.kind === 'repair') return stop(at, 'absent', decided.reason);
        if (decided.kind === 'pass') {
          events.emit('replay_passed_over', { step: stats.nSteps + 1, cachedStep: atStep, action: describeAction(cached), state: decided.state });
          labels.push(`${describeAction(cached)} (passed over: already ${decided.state})`);
          traces.push(passedOverTrace(cached, session.currentUrl()));
          continue;
        }
      }
      const startedAt = now();
      let touchedAt: number | undefined;
      const report = await browserCall(
        (signal) =>
          space.run(call.value.call, {
            signal,
            beforeRun: (planned) => {
              touchedAt ??= now();
              events.notify('timeline_mark', planned, touchedAt);
            },
          }),
        input.signal,
      );
      if (report.counted) events.notify('action_counted', { step: stats.nSteps + 1, action: report.action });
      events.emit(
        'action',
        {
          step: stats.nSteps + 1,
          by: 'cache',
          tool: call.value.call.toolset_name ?? call.value.call.name,
          action: report.action,
          input: call.value.call.input,
          ok: report.ok,
          ...(report.ok ? {} : { error: report.error }),
          label: report.label,
          ...(report.point ? { point: report.point } : {}),
          durationMs: now() - startedAt,
        },
        touchedAt ?? startedAt,
      );
      if (!report.ok) return stop(at, 'failed', `the action failed: ${report.error ?? 'unknown error'}`);
      if (call.value.check) {
        const { ref, value, how, element } = call.value.check;
        const tab = session.tab();
        const held = tab ? await browserCall((signal) => holdsValue(tab, ref, value, how, element, signal), input.signal) : { ok: false as const, reason: 'the browser has no open tab' };
        events.emit('read_back', { step: stats.nSteps + 1, by: 'cache', element: describeElement(element), expected: String(cached.input[how === 'typed' ? 'text' : 'value'] ?? ''), held: held.held ?? '', ok: held.ok });
        // A value the field does not hold is not done: the next cache does not keep it.
        if (!held.ok) return stop(at, 'not_held', held.reason);
        const shown = held.checked !== undefined ? (held.checked ? 'checked' : 'unchecked') : (held.held ?? '');
        result.readBacks.push({ atStep, element: describeElement(element ?? cached.target ?? cached.focus), value: shown });
      }
      labels.push(report.label);
      if (report.trace) traces.push(report.trace);
    }
    close(true);
  }
  return result;
}

/** A cached action passed over, as the next cache keeps it: the same action, element and effect. */
function passedOverTrace(cached: CachedAction, url: string): ActionTrace {
  return {
    tool: cached.tool,
    ...(cached.toolsetName ? { toolsetName: cached.toolsetName } : {}),
    input: structuredClone(cached.input),
    url,
    ...(cached.target ? { target: cached.target as ElementIdentity } : {}),
    ...(cached.focus ? { focus: cached.focus as ElementIdentity } : {}),
    ...(cached.effect ? { effect: structuredClone(cached.effect) } : {}),
  };
}

function before(a: ActionAt, b: ActionAt): boolean {
  return a.step < b.step || (a.step === b.step && a.action < b.action);
}

/**
 * Where the replay begins: the first step, unless its page is not this one and a later step's is
 * (a profile already signed in opens past the sign-in): then the first step on this page. Steps
 * are passed over only when they set no value but on a page where a secret went (a sign-in):
 * a record's own values are never left out.
 */
export function startingStep(steps: readonly CachedAction[][], shape: string, input: Pick<InputSource, 'maskedPayload' | 'paths'>): number {
  const pageOf = (step: CachedAction[]) => step.find((a) => !SKIPPED.has(actionOf(a)))?.page;
  const first = pageOf(steps[0] ?? []);
  if (first === undefined || samePage(first, shape)) return 0;
  const later = steps.findIndex((step) => {
    const page = pageOf(step);
    return page !== undefined && samePage(page, shape);
  });
  if (later <= 0) return 0;
  const passed = steps.slice(0, later).flat();
  const secret = new Set(input.paths.map((p) => `{{${p}}}`));
  const hasSecret = (a: CachedAction) => (a.refs ?? []).some((path) => {
    const value = valueAt(input.maskedPayload, path);
    return typeof value === 'string' && secret.has(value);
  });
  const signIn = new Set(passed.filter(hasSecret).map((a) => a.page));
  return passed.every((a) => !SETS_VALUE.has(actionOf(a)) || signIn.has(a.page)) ? later : 0;
}
