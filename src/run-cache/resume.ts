/**
 * Where a replay goes on after a repair (docs/run-cache.md#repair-not-restart): the next cached
 * action whose precondition holds on the page the repair left, found without running anything.
 *
 * In order: the later cached steps, each from its first action the repair did not already do
 * (the same action on the same element with the same value: the model may have gone on past
 * the step it was asked for), passing over steps that are not on this page (a page that is
 * gone, or one the repair went past); then the rest of the repaired step itself, the action the
 * replay stopped at last (a dialog closed, the button it stopped at is there again). A step whose
 * first action is on this page but blocked (a changed value it depends on, no value in the
 * input) is where the replay goes on too: it stops there at once, and that step is repaired in
 * its turn. Nothing past the stopped action is taken before the model acted or called
 * `step_done`: a repair that only looked at the page does not pass over the step it was for. When nothing is left of the earlier run but what the repair did, the run goes to the
 * final check.
 */
import type { ActionTrace } from '../toolset/types.js';
import { actionOf, entersValue, PICKED, SETS_VALUE, sameElement, SKIPPED, type ActionAt } from './actions.js';
import { describeAction, type Probe } from './precondition.js';
import type { CachedAction } from '../contract/run-cache.js';
import { pathId } from '../contract/key-path.js';
import { placeholdersIn } from '../domain/input-references.js';

export type ResumePoint =
  /** The replay goes on at this action. */
  | { kind: 'at'; at: ActionAt }
  /** Nothing of the earlier run is left to replay: the final check follows. */
  | { kind: 'end' }
  /** The page matches no action left: why, for the model's next try. */
  | { kind: 'none'; reason: string };

export interface ResumeInput {
  steps: readonly CachedAction[][];
  /** The action the replay stopped at. */
  stop: ActionAt;
  /** `replace`: the repair stood in for the stopped action (it is tried last); `insert`: it came before it (it is tried first). */
  mode: 'replace' | 'insert';
  /** The repair's actions that ran, in order. */
  done: readonly ActionTrace[];
  /** Whether the model said the step is done. */
  stepDone: boolean;
}

/** Keys of an action's input that say what it enters or opens. */
const VALUE_KEYS = ['value', 'text', 'url', 'paths', 'action', 'key'] as const;

/** A cached action's precondition on the page as it is now (precondition.ts `probeAction`). */
export type ProbeFn = (cached: CachedAction) => Promise<Probe>;

export async function findResume(probe: ProbeFn, input: ResumeInput): Promise<ResumePoint> {
  const { steps, stop, mode } = input;
  const undone = (at: ActionAt) => {
    const cached = steps[at.step]?.[at.action];
    return cached !== undefined && !SKIPPED.has(actionOf(cached)) && !input.done.some((trace) => sameAction(cached, trace));
  };
  /** The first action of a step from `from` that the repair did not do already. */
  const firstUndone = (step: number, from: number): ActionAt | undefined => {
    for (let action = from; action < (steps[step]?.length ?? 0); action++) if (undone({ step, action })) return { step, action };
    return undefined;
  };
  /** Whether the replay can go on at an action: it holds, or it is on this page and blocked for its own reason (the replay stops there and repairs it). */
  const goesOn = async (at: ActionAt | undefined) => {
    if (!at) return false;
    const found = await probe(steps[at.step]![at.action]!);
    return found.holds || found.kind !== 'absent';
  };
  if (mode === 'insert') {
    const own = firstUndone(stop.step, stop.action);
    if (await goesOn(own)) return { kind: 'at', at: own! };
  }
  // Past the stopped action only once the model did something of its kind (entered a value, for
  // an action that enters one) or said the step is done: a look at the page or a scroll alone
  // never passes over it (its value would simply not be entered).
  const acted = input.stepDone || input.done.some((trace) => (entersValue(steps[stop.step]![stop.action]!) ? traceEntersValue(trace) : isAction(trace)));
  if (acted) {
    // The rest of the stopped step enters input values the repair did not (a tag typed after its
    // panel was opened): it goes on at the stopped action once that holds (what was in the way is
    // gone: the next cache keeps it), else at the rest, before any later step is looked at (one
    // that fits would pass the values over).
    if (mode === 'replace' && entersInput(steps[stop.step]!.slice(stop.action + 1), input.done)) {
      if (undone(stop) && (await probe(steps[stop.step]![stop.action]!)).holds) return { kind: 'at', at: stop };
      const rest = firstUndone(stop.step, stop.action + 1);
      if (await goesOn(rest)) return { kind: 'at', at: rest! };
    }
    for (let step = stop.step + 1; step < steps.length; step++) {
      const first = firstUndone(step, 0);
      if (!first) continue;
      const found = await probe(steps[first.step]![first.action]!);
      if (found.holds || found.kind !== 'absent') return { kind: 'at', at: first };
      // A step on this very page that enters input values is never passed over because its
      // element is not found (a panel closed, a field not drawn yet): going on past it would
      // commit the record without them. The replay stops there and that step is repaired.
      if (found.onPage && entersInput(steps[step]!.slice(first.action), input.done)) return { kind: 'at', at: first };
    }
    if (mode === 'replace') {
      const rest = firstUndone(stop.step, stop.action + 1);
      if (await goesOn(rest)) return { kind: 'at', at: rest! };
    }
  }
  // The stopped action again only when it now holds: blocked, it would only stop the replay again.
  if (mode === 'replace' && undone(stop) && (await probe(steps[stop.step]![stop.action]!)).holds) return { kind: 'at', at: stop };
  if (!acted) return { kind: 'none', reason: 'nothing was done yet: do the step on this page, then call step_done' };
  const left = nextLeft(steps, stop, mode, input.done);
  if (!left && (input.stepDone || input.done.length > 0)) return { kind: 'end' };
  if (!left) return { kind: 'none', reason: 'nothing of the earlier run is left to replay: call step_done once the step is done' };
  const cached = steps[left.step]![left.action]!;
  return { kind: 'none', reason: `the page does not match what the earlier run did next: ${describeAction(cached)} on ${cached.page}` };
}

/**
 * Whether cached actions left undone by the repair enter input values by name that the repair
 * did not enter by name either (a repair that entered them its own way has done them).
 */
function entersInput(actions: readonly CachedAction[], done: readonly ActionTrace[]): boolean {
  const entered = new Set(done.flatMap((trace) => ['value', 'text'].flatMap((key) => (typeof trace.input[key] === 'string' ? placeholdersIn(trace.input[key] as string).map((ph) => pathId(ph.path)) : []))));
  return actions.some((cached) => !done.some((trace) => sameAction(cached, trace)) && (cached.refs ?? []).some((path) => !entered.has(pathId(path))));
}

/** The first cached action after the stop (the stopped one too, for `insert`) that the repair did not do. */
function nextLeft(steps: readonly CachedAction[][], stop: ActionAt, mode: ResumeInput['mode'], done: readonly ActionTrace[]): ActionAt | undefined {
  for (let s = stop.step; s < steps.length; s++) {
    const actions = steps[s]!;
    for (let a = s === stop.step ? stop.action + (mode === 'insert' ? 0 : 1) : 0; a < actions.length; a++) {
      const cached = actions[a]!;
      if (!SKIPPED.has(actionOf(cached)) && !done.some((trace) => sameAction(cached, trace))) return { step: s, action: a };
    }
  }
  return undefined;
}

/**
 * Whether the repair already did a cached action: the same action, on the same element (role and
 * name) or into the same focused element, entering or opening the same thing.
 */
export function sameAction(cached: CachedAction, trace: ActionTrace): boolean {
  const action = trace.toolsetName ? trace.tool : String(trace.input.action ?? trace.tool);
  if (action !== actionOf(cached) || (trace.toolsetName ?? '') !== (cached.toolsetName ?? '')) return false;
  const same = (a: { role: string; name: string } | undefined, b: { role: string; name: string } | undefined) => (a === undefined ? b === undefined : b !== undefined && sameElement(a, b));
  if (!same(cached.target, trace.target) || (cached.focus !== undefined && !same(cached.focus, trace.focus))) return false;
  return VALUE_KEYS.every((key) => JSON.stringify(cached.input[key]) === JSON.stringify(trace.input[key]));
}

function traceAction(trace: ActionTrace): string {
  return trace.toolsetName ? trace.tool : String(trace.input.action ?? trace.tool);
}

/** Whether a repair's action changed the page's state: not a wait, a read or a scroll. */
function isAction(trace: ActionTrace): boolean {
  const action = traceAction(trace);
  return !SKIPPED.has(action) && !['scroll', 'scroll_to', 'mouse_move', 'read_page', 'find', 'get_page_text'].includes(action);
}

/** Whether a repair's action entered a value: it set or typed one, or picked or ticked something. */
function traceEntersValue(trace: ActionTrace): boolean {
  return SETS_VALUE.has(traceAction(trace)) || (trace.target !== undefined && PICKED.has(trace.target.role) && !('value' in trace.input));
}
