/**
 * Replays a workflow version's cached run (docs/run-cache.md#replay) with no model: step by step,
 * each action only once its precondition holds on the page as it is now: the same page (URL
 * without query values), the element it acted on found again by role and accessible name,
 * visible and enabled, the keyboard focus where typing went before, and the input values it
 * depends on as the entry allows (values.ts). The action then runs through the action space like
 * the model's would (the allow-list, the input's values put in by name, settling, the video).
 * At the first precondition that fails, action that fails, or value not held, the replay stops
 * and says where and why, naming the element the cached run acted on: the model takes over from
 * there (a repair of that one action would slot in at the same place).
 */
import type { BrowserSession, BrowserTab, ElementIdentity } from '../browser/types.js';
import { ExecutionError } from '../domain/errors.js';
import { enterText, enterValue, type InputSource } from '../domain/input-references.js';
import { formatPath, valueAt } from '../domain/key-path.js';
import type { ToolUseBlock } from '../model/types.js';
import type { ExecutionEventSink } from '../runner/events.js';
import type { ActionSpace, ActionTrace } from '../toolset/types.js';
import { browserCall } from '../agent/browser-call.js';
import type { RunStats } from '../agent/loop.js';
import { actionOf, SETS_VALUE, SKIPPED, sameElement, describeElement, type ActionAt } from './actions.js';
import { numbersAside, pageShape, samePage, type CachedAction } from './format.js';
import { holdsValue } from './replay-check.js';
import { GUARD_REASONS, guardHolds, type InputLeaf } from './values.js';

export interface ReplayInput {
  steps: CachedAction[][];
  /** The new input: its values by name, entered by the action space as the model's would be. */
  input: InputSource;
  /** The new input's values the model would see (no secrets), for the guards. */
  leaves: readonly InputLeaf[];
  /** The entry's fingerprint: the salt of its guards' digests. */
  salt: string;
  maxSteps: number;
  /** Where the replay hands over at the latest, and why: before this action (docs/run-cache.md#values-the-earlier-run-never-entered). */
  handOver?: ActionAt & { reason: string };
  signal: AbortSignal;
}

export interface ReplayDeps {
  space: ActionSpace;
  session: BrowserSession;
  /** Its lines, and each action's moment on the video's timeline as it touches the page. */
  events: ExecutionEventSink;
  now?: () => number;
}

export interface ReplayStop {
  /** The cached step (1-based) the replay stopped in. */
  atStep: number;
  reason: string;
  /** The cached action it did not run, as the earlier run did it (its element as that run saw it). */
  next?: string;
}

export interface ReplayResult {
  /** Cached steps replayed whole. */
  replayed: number;
  /** Where the replay stopped; absent when every step was replayed. */
  stopped?: ReplayStop;
  /** The replayed actions' labels by step, for the model if it takes over (names, no secrets). */
  done: string[][];
  /** The cached steps before the one the replay began at (the page was already past them): kept for the next cache. */
  skipped: CachedAction[][];
  /** What the new cache keeps of the replayed actions, by step. */
  traces: ActionTrace[][];
}

/** Tab ids and scripts are not checked against the page: those steps go back to the model. */
const NOT_REPLAYED = new Set(['new_tab', 'switch_tab', 'close_tab', 'javascript_exec']);

export async function replaySteps(deps: ReplayDeps, input: ReplayInput, stats: RunStats): Promise<ReplayResult> {
  const { space, session, events } = deps;
  const now = deps.now ?? Date.now;
  const from = startingStep(input.steps, pageShape(session.currentUrl()), input.input);
  const result: ReplayResult = { replayed: 0, done: [], traces: [], skipped: input.steps.slice(0, from) };
  if (from > 0) events.emit('replay_started_later', { step: from + 1, skipped: from, reason: `the page is already past step${from > 1 ? `s 1–${from}` : ' 1'}` });
  // A hand-over in the steps passed over happens where the replay begins.
  const handOver = input.handOver && input.handOver.step < from ? { ...input.handOver, step: from, action: 0 } : input.handOver;
  let n = 0;
  for (const [index, step] of input.steps.entries()) {
    if (index < from) continue;
    const atStep = index + 1;
    const labels: string[] = [];
    const traces: ActionTrace[] = [];
    const stop = (reason: string, cached?: CachedAction): ReplayResult => {
      const next = cached ? describeAction(cached) : undefined;
      events.emit('replay_stopped', { step: atStep, reason, ...(next ? { next } : {}) });
      // What this step did before it stopped is done: the next cache keeps it.
      return { ...result, done: labels.length ? [...result.done, labels] : result.done, traces: traces.length > 0 ? [...result.traces, traces] : result.traces, stopped: { atStep, reason, ...(next ? { next } : {}) } };
    };
    if (stats.nSteps >= input.maxSteps) return stop(`the step cap of ${input.maxSteps} was reached`, step[0]);
    for (const [at, cached] of step.entries()) {
      input.signal.throwIfAborted();
      if (handOver && handOver.step === index && handOver.action === at) return stop(handOver.reason, cached);
      const action = actionOf(cached);
      if (SKIPPED.has(action)) continue;
      if (NOT_REPLAYED.has(action)) return stop(`${action} steps are not replayed`, cached);
      const shape = pageShape(session.currentUrl());
      if (!samePage(cached.page, shape)) return stop(`the page is ${shape}, where the earlier run was on ${cached.page}`, cached);
      const missing = (cached.refs ?? []).find((path) => !isEnterable(valueAt(input.input.maskedPayload, path)));
      if (missing) return stop(`the new input has no value at ${formatPath(missing)}, which the earlier run entered there`, cached);
      if (cached.guard && !guardHolds(cached.guard, input.leaves, input.salt)) {
        return stop(`${GUARD_REASONS[cached.guard.why]} (${cached.guard.paths.map(formatPath).join(', ')}), and the new input differs there`, cached);
      }
      const call = await browserCall((signal) => prepare(cached, session, space, input.input, ++n, signal), input.signal);
      if (!call.ok) return stop(call.reason, cached);
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
      if (report.counted) stats.nAgentActions++;
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
      if (!report.ok) return stop(`the action failed: ${report.error ?? 'unknown error'}`, cached);
      labels.push(report.label);
      if (report.trace) traces.push(report.trace);
      if (call.value.check) {
        const { ref, value, how, element } = call.value.check;
        const tab = session.tab();
        const held = tab ? await browserCall((signal) => holdsValue(tab, ref, value, how, element, signal), input.signal) : { ok: false as const, reason: 'the browser has no open tab' };
        if (!held.ok) return stop(held.reason, cached);
      }
    }
    stats.nSteps++;
    result.replayed++;
    result.traces.push(traces);
    result.done.push(labels);
    events.emit('replayed_step', { step: stats.nSteps, by: 'cache', actions: traces.length });
  }
  return result;
}

function isEnterable(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
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

/** A value set by a replayed action, to read back afterwards. */
interface HoldCheckPlan {
  ref: string;
  value: unknown;
  how: 'set' | 'typed';
  element?: ElementIdentity;
}

type Prepared = { ok: true; value: { call: ToolUseBlock; check?: HoldCheckPlan } } | { ok: false; reason: string };

/**
 * The call to make now: the cached one as the model made it (input values by name: the action
 * space enters the new input's values), its target found again on this page.
 */
async function prepare(cached: CachedAction, session: BrowserSession, space: ActionSpace, input: InputSource, n: number, signal: AbortSignal): Promise<Prepared> {
  const tab = session.tab();
  if (!tab) throw new ExecutionError('browser_error', 'the browser has no open tab');
  const args = structuredClone(cached.input);
  const action = actionOf(cached);
  // What the field must hold afterwards: the new input's values, secrets left as their names (a read never shows them).
  const shown: InputSource = { ...input, reveal: (text) => text };
  let check: HoldCheckPlan | undefined;
  if (cached.focus) {
    const focused = await tab.focused(signal);
    if (!focused || !sameElement(focused.identity, cached.focus)) {
      return { ok: false, reason: `the keyboard focus is on ${describeElement(focused?.identity)}, where the earlier run typed into ${describeElement(cached.focus)}` };
    }
    if (action === 'type' && typeof args.text === 'string') {
      const found = await tab.locate(focused.identity, signal);
      if (found.ok) check = { ref: found.value.ref, value: enterText(shown, args.text).text, how: 'typed', element: focused.identity };
    }
  }
  if (cached.target) {
    const identity = cached.target as ElementIdentity;
    const found = await locateByShape(tab, identity, signal);
    if (!found.ok) return { ok: false, reason: found.error };
    if (!found.value.enabled) return { ok: false, reason: `${describeElement(identity)} is disabled` };
    const value = args.value;
    if (action === 'form_input' && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) check = { ref: found.value.ref, value: enterValue(shown, value).value, how: 'set', element: identity };
    if (cached.toolsetName === 'browser') {
      // Members that target by reference or coordinate: the element found now, by its reference.
      if (args.target && typeof args.target === 'object') args.target = { type: 'ref', ref: found.value.ref };
    } else if (Array.isArray(args.coordinate)) {
      // Computer use: where the element is now (it may have moved), in the screenshot's pixels.
      const at = await tab.pointOf(found.value.ref, signal);
      if (!at.ok) return { ok: false, reason: at.error };
      const sx = space.display.width / session.viewport.width;
      const sy = space.display.height / session.viewport.height;
      args.coordinate = [Math.round(at.value.x * sx), Math.round(at.value.y * sy)];
    }
  }
  const call: ToolUseBlock = { type: 'tool_use', id: `toolu_cache_${String(n).padStart(4, '0')}`, name: cached.tool, input: args, ...(cached.toolsetName ? { toolset_name: cached.toolsetName } : {}) };
  return { ok: true, value: { call, ...(check ? { check } : {}) } };
}

/**
 * The element of an identity: by its name, or, when no element has that name and the name holds
 * numbers (a record's id: "Invoice #1042"), the one element of the same role, tag and type whose
 * name has the same shape with other numbers ("Invoice #1077"). Several such elements are a tie:
 * nothing is guessed.
 */
async function locateByShape(tab: BrowserTab, identity: ElementIdentity, signal: AbortSignal): ReturnType<BrowserTab['locate']> {
  const found = await tab.locate(identity, signal);
  if (found.ok || !/\d/.test(identity.name)) return found;
  const norm = (s: string) => numbersAside(s.replace(/\s+/g, ' ').trim().toLowerCase());
  const shape = norm(identity.name);
  const lines = await tab.find((candidates) => candidates.filter((c) => c.role === identity.role && norm(c.name) === shape).map((c) => c.i), 2, signal);
  if (lines.length !== 1) return found;
  const ref = /\[(ref_\d+)\]/.exec(lines[0]!)?.[1];
  if (!ref) return found;
  const other = await tab.identify(ref, signal);
  if (!other.ok || other.value.tag !== identity.tag || other.value.type !== identity.type) return found;
  if (identity.href && (!other.value.href || numbersAside(other.value.href) !== numbersAside(identity.href))) return found;
  return tab.locate(other.value, signal);
}

/** A cached action as the earlier run did it, for a reason and the hand-over: `left_click on button "Place order"`. */
export function describeAction(cached: CachedAction): string {
  const action = actionOf(cached);
  if (cached.target) return `${action} on ${describeElement(cached.target)}`;
  if (cached.focus) return `${action} into ${describeElement(cached.focus)}`;
  return action;
}
