/**
 * Replays a workflow version's cached run (contract §11) with no model: step by step, each
 * action only once its precondition holds on the page as it is now: the same page (URL without
 * query values), the element it acted on found again by role and accessible name, visible and
 * enabled, the keyboard focus where typing went before. The action then runs through the action
 * space like the model's would (the allow-list, the secrets, settling, the video), with the new
 * input's values. At the first precondition that fails, or action that fails, the replay stops
 * and says where and why: the model takes over from there.
 */
import type { BrowserSession, ElementIdentity } from '../browser/types.js';
import { ExecutionError } from '../domain/errors.js';
import { fillTemplate, pageShape, type CachedAction, type CachedElement } from '../domain/run-cache.js';
import type { ToolUseBlock } from '../model/types.js';
import type { EventSink } from '../telemetry/types.js';
import type { ActionSpace, ActionTrace } from '../toolset/types.js';
import { browserCall, type RunStats } from './loop.js';

export interface ReplayInput {
  steps: CachedAction[][];
  /** The new input, secrets as placeholders, and the secrets' paths (they stay placeholders until typed). */
  maskedInput: unknown;
  secretPaths: readonly string[];
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
  /** One line per replayed action, for the model if it takes over (placeholders, no secrets). */
  done: string[];
  /** What the new cache keeps of the replayed actions, by step. */
  traces: ActionTrace[][];
}

/** Actions that are not worth replaying: the page's timing, not the task. */
const SKIPPED = new Set(['wait', 'screenshot', 'zoom', 'cursor_position']);
/** Tab ids and scripts are not checked against the page: those steps go back to the model. */
const NOT_REPLAYED = new Set(['new_tab', 'switch_tab', 'close_tab', 'javascript_exec']);

export async function replaySteps(deps: ReplayDeps, input: ReplayInput, stats: RunStats): Promise<ReplayResult> {
  const { space, session, events } = deps;
  const now = deps.now ?? Date.now;
  const result: ReplayResult = { replayed: 0, done: [], traces: [] };
  let n = 0;
  for (const [index, step] of input.steps.entries()) {
    const atStep = index + 1;
    const stop = (reason: string): ReplayResult => {
      events.emit('replay_stopped', { step: atStep, reason });
      // What this step did before it stopped is done: the next cache keeps it.
      return { ...result, traces: traces.length > 0 ? [...result.traces, traces] : result.traces, stopped: { atStep, reason } };
    };
    const traces: ActionTrace[] = [];
    if (stats.nSteps >= input.maxSteps) return stop(`the step cap of ${input.maxSteps} was reached`);
    for (const cached of step) {
      input.signal.throwIfAborted();
      const action = cached.toolsetName ? cached.tool : String(cached.input.action ?? cached.tool);
      if (SKIPPED.has(action)) continue;
      if (NOT_REPLAYED.has(action)) return stop(`${action} steps are not replayed`);
      const shape = pageShape(session.currentUrl());
      if (shape !== cached.page) return stop(`the page is ${shape}, where the earlier run was on ${cached.page}`);
      const call = await browserCall(() => prepare(cached, session, space, input, ++n), input.signal);
      if (!call.ok) return stop(call.reason);
      const startedAt = now();
      let touchedAt: number | undefined;
      const report = await browserCall(
        () =>
          space.run(call.value, {
            signal: input.signal,
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
          tool: call.value.toolset_name ?? call.value.name,
          action: report.action,
          input: call.value.input,
          ok: report.ok,
          ...(report.ok ? {} : { error: report.error }),
          label: report.label,
          ...(report.point ? { point: report.point } : {}),
          durationMs: now() - startedAt,
        },
        touchedAt ?? startedAt,
      );
      if (!report.ok) return stop(`the action failed: ${report.error ?? 'unknown error'}`);
      result.done.push(report.label);
      if (report.trace) traces.push(report.trace);
    }
    stats.nSteps++;
    result.replayed++;
    result.traces.push(traces);
    events.emit('replayed_step', { step: stats.nSteps, by: 'cache', actions: traces.length });
  }
  return result;
}

/** The call to make now: the cached one with the new input, its target found again on this page. */
async function prepare(
  cached: CachedAction,
  session: BrowserSession,
  space: ActionSpace,
  input: ReplayInput,
  n: number,
): Promise<{ ok: true; value: ToolUseBlock } | { ok: false; reason: string }> {
  const tab = session.tab();
  if (!tab) throw new ExecutionError('browser_error', 'the browser has no open tab');
  const args: Record<string, unknown> = fillTemplate(structuredClone(cached.input), input.maskedInput, input.secretPaths);
  if (cached.focus) {
    const focused = await tab.focused();
    if (!focused || !sameElement(focused.identity, cached.focus)) {
      return { ok: false, reason: `the keyboard focus is on ${describe(focused?.identity)}, where the earlier run typed into ${describe(cached.focus)}` };
    }
  }
  if (cached.target) {
    const wanted = fillTemplate(cached.target, input.maskedInput, input.secretPaths) as ElementIdentity;
    const found = await tab.locate(wanted);
    if (!found.ok) return { ok: false, reason: `${found.error} (the earlier run acted on ${describe(wanted)})` };
    if (!found.value.enabled) return { ok: false, reason: `${describe(wanted)} is disabled` };
    if (cached.toolsetName === 'browser') {
      // Members that target by reference or coordinate: the element found now, by its reference.
      if (args.target && typeof args.target === 'object') args.target = { type: 'ref', ref: found.value.ref };
    } else if (Array.isArray(args.coordinate)) {
      // Computer use: where the element is now (it may have moved), in the screenshot's pixels.
      const at = await tab.pointOf(found.value.ref);
      if (!at.ok) return { ok: false, reason: at.error };
      const sx = space.display.width / session.viewport.width;
      const sy = space.display.height / session.viewport.height;
      args.coordinate = [Math.round(at.value.x * sx), Math.round(at.value.y * sy)];
    }
  }
  return {
    ok: true,
    value: { type: 'tool_use', id: `toolu_cache_${String(n).padStart(4, '0')}`, name: cached.tool, input: args, ...(cached.toolsetName ? { toolset_name: cached.toolsetName } : {}) },
  };
}

function sameElement(a: ElementIdentity | CachedElement, b: ElementIdentity | CachedElement): boolean {
  const norm = (s: string | undefined) => (s ?? '').replace(/\s+/g, ' ').trim().toLowerCase();
  return a.role === b.role && norm(a.name) === norm(b.name);
}

function describe(identity: ElementIdentity | CachedElement | undefined): string {
  if (!identity) return 'nothing';
  return `${identity.role}${identity.name ? ` "${identity.name}"` : ''}`;
}
