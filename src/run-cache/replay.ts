/**
 * Replays a workflow version's cached run (docs/run-cache.md) with no model: step by step, each
 * action only once its precondition holds on the page as it is now: the same page (URL without
 * query values), the element it acted on found again by role and accessible name, visible and
 * enabled, the keyboard focus where typing went before. The action then runs through the action
 * space like the model's would (the allow-list, the secrets, settling, the video), with the new
 * input's values. At the first precondition that fails, or action that fails, the replay stops
 * and says where and why: the model takes over from there.
 */
import type { BrowserSession, BrowserTab, ElementIdentity } from '../browser/types.js';
import { ExecutionError } from '../domain/errors.js';
import type { ToolUseBlock } from '../model/types.js';
import type { EventSink } from '../telemetry/types.js';
import type { ActionSpace, ActionTrace } from '../toolset/types.js';
import { browserCall } from '../agent/browser-call.js';
import type { RunStats } from '../agent/loop.js';
import { numbersAside, pageShape, samePage, type CachedAction, type CachedElement } from './format.js';
import { holdsValue } from './replay-check.js';
import { fillValues, GUARD_REASONS, guardHolds } from './values.js';

export interface ReplayInput {
  steps: CachedAction[][];
  /** The new input, secrets as placeholders, and the secrets' paths (they stay placeholders until typed). */
  maskedInput: unknown;
  secretPaths: readonly string[];
  /** The entry's fingerprint: the salt of its guards' digests. */
  salt: string;
  maxSteps: number;
  signal: AbortSignal;
}

export interface ReplayDeps {
  space: ActionSpace;
  session: BrowserSession;
  events: EventSink;
  onAction?: (mark: { atMs: number; label: string; point?: { x: number; y: number } }) => void;
  now?: () => number;
}

export interface ReplayResult {
  /** Cached steps replayed whole. */
  replayed: number;
  /** Where the replay stopped: the step (1-based) and why; absent when every step was replayed. */
  stopped?: { atStep: number; reason: string };
  /** The replayed actions' labels by step, for the model if it takes over (placeholders, no secrets). */
  done: string[][];
  /** The cached steps before the one the replay began at (the page was already past them): kept for the next cache. */
  skipped: CachedAction[][];
  /** What the new cache keeps of the replayed actions, by step. */
  traces: ActionTrace[][];
}

/** Actions that are not worth replaying: the page's timing, not the task. */
const SKIPPED = new Set(['wait', 'screenshot', 'zoom', 'cursor_position']);
/** Actions that enter a value in the page. */
const SETS_VALUE = new Set(['form_input', 'type', 'file_upload']);
/** Tab ids and scripts are not checked against the page: those steps go back to the model. */
const NOT_REPLAYED = new Set(['new_tab', 'switch_tab', 'close_tab', 'javascript_exec']);

export async function replaySteps(deps: ReplayDeps, input: ReplayInput, stats: RunStats): Promise<ReplayResult> {
  const { space, session, events } = deps;
  const now = deps.now ?? Date.now;
  const from = startingStep(input.steps, pageShape(session.currentUrl()), input.secretPaths);
  const result: ReplayResult = { replayed: 0, done: [], traces: [], skipped: input.steps.slice(0, from) };
  if (from > 0) events.emit('replay_started_later', { step: from + 1, skipped: from, reason: `the page is already past step${from > 1 ? `s 1–${from}` : ' 1'}` });
  let n = 0;
  for (const [index, step] of input.steps.entries()) {
    if (index < from) continue;
    const atStep = index + 1;
    const labels: string[] = [];
    const stop = (reason: string): ReplayResult => {
      events.emit('replay_stopped', { step: atStep, reason });
      // What this step did before it stopped is done: the next cache keeps it.
      return { ...result, done: labels.length ? [...result.done, labels] : result.done, traces: traces.length > 0 ? [...result.traces, traces] : result.traces, stopped: { atStep, reason } };
    };
    const traces: ActionTrace[] = [];
    if (stats.nSteps >= input.maxSteps) return stop(`the step cap of ${input.maxSteps} was reached`);
    for (const cached of step) {
      input.signal.throwIfAborted();
      const action = actionOf(cached);
      if (SKIPPED.has(action)) continue;
      if (NOT_REPLAYED.has(action)) return stop(`${action} steps are not replayed`);
      const shape = pageShape(session.currentUrl());
      if (!samePage(cached.page, shape)) return stop(`the page is ${shape}, where the earlier run was on ${cached.page}`);
      if (cached.guard && !guardHolds(cached.guard, input.maskedInput, input.salt)) {
        return stop(`${GUARD_REASONS[cached.guard.why]} (${cached.guard.paths.join(', ')}), and the new input differs there`);
      }
      const call = await browserCall((signal) => prepare(cached, session, space, input, ++n, signal), input.signal);
      if (!call.ok) return stop(call.reason);
      const startedAt = now();
      let touchedAt: number | undefined;
      const report = await browserCall(
        (signal) =>
          space.run(call.value.call, {
            signal,
            beforeRun: (planned) => {
              touchedAt ??= now();
              deps.onAction?.({ atMs: touchedAt, ...planned });
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
      if (!report.ok) return stop(`the action failed: ${report.error ?? 'unknown error'}`);
      labels.push(report.label);
      if (report.trace) traces.push(report.trace);
      if (call.value.check) {
        const { ref, value, how, element } = call.value.check;
        const tab = session.tab();
        const held = tab ? await browserCall((signal) => holdsValue(tab, ref, value, how, element, signal), input.signal) : { ok: false as const, reason: 'the browser has no open tab' };
        if (!held.ok) return stop(held.reason);
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

function actionOf(cached: CachedAction): string {
  return cached.toolsetName ? cached.tool : String(cached.input.action ?? cached.tool);
}

/**
 * Where the replay begins: the first step, unless its page is not this one and a later step's is
 * (a profile already signed in opens past the sign-in): then the first step on this page. Steps
 * are passed over only when they set no value but on a page where a secret went (a sign-in):
 * a record's own values are never left out.
 */
export function startingStep(steps: readonly CachedAction[][], shape: string, secretPaths: readonly string[]): number {
  const pageOf = (step: CachedAction[]) => step.find((a) => !SKIPPED.has(actionOf(a)))?.page;
  const first = pageOf(steps[0] ?? []);
  if (first === undefined || samePage(first, shape)) return 0;
  const later = steps.findIndex((step) => {
    const page = pageOf(step);
    return page !== undefined && samePage(page, shape);
  });
  if (later <= 0) return 0;
  const passed = steps.slice(0, later).flat();
  const hasSecret = (a: CachedAction) => [...JSON.stringify(a.input).matchAll(/\{\{\s*([^}\s]+)\s*\}\}/g)].some((m) => secretPaths.includes(m[1]!));
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

/** The call to make now: the cached one with the new input, its target found again on this page. */
async function prepare(cached: CachedAction, session: BrowserSession, space: ActionSpace, input: ReplayInput, n: number, signal: AbortSignal): Promise<Prepared> {
  const tab = session.tab();
  if (!tab) throw new ExecutionError('browser_error', 'the browser has no open tab');
  const filled = fillValues(structuredClone(cached.input), input.maskedInput, input.secretPaths);
  if (!filled.ok) return filled;
  const args = filled.value as Record<string, unknown>;
  const action = actionOf(cached);
  let check: HoldCheckPlan | undefined;
  if (cached.focus) {
    const focused = await tab.focused(signal);
    const wanted = fillValues(cached.focus, input.maskedInput, input.secretPaths);
    const focus = (wanted.ok ? wanted.value : cached.focus) as ElementIdentity;
    if (!focused || !sameElement(focused.identity, focus)) {
      return { ok: false, reason: `the keyboard focus is on ${describe(focused?.identity)}, where the earlier run typed into ${describe(focus)}` };
    }
    if (action === 'type' && typeof args.text === 'string') {
      const found = await tab.locate(focused.identity, signal);
      if (found.ok) check = { ref: found.value.ref, value: args.text, how: 'typed', element: focused.identity };
    }
  }
  if (cached.target) {
    const wanted = fillValues(cached.target, input.maskedInput, input.secretPaths);
    if (!wanted.ok) return wanted;
    const identity = wanted.value as ElementIdentity;
    const found = await locateByShape(tab, identity, signal);
    if (!found.ok) return { ok: false, reason: `${found.error} (the earlier run acted on ${describe(identity)})` };
    if (!found.value.enabled) return { ok: false, reason: `${describe(identity)} is disabled` };
    if (action === 'form_input' && 'value' in args) check = { ref: found.value.ref, value: args.value, how: 'set', element: identity };
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

function sameElement(a: ElementIdentity | CachedElement, b: ElementIdentity | CachedElement): boolean {
  const norm = (s: string | undefined) => (s ?? '').replace(/\s+/g, ' ').trim().toLowerCase();
  return a.role === b.role && norm(a.name) === norm(b.name);
}

function describe(identity: ElementIdentity | CachedElement | undefined): string {
  if (!identity) return 'nothing';
  return `${identity.role}${identity.name ? ` "${identity.name}"` : ''}`;
}
