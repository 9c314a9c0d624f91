/**
 * A cached action's effect on the page as it is now (docs/run-cache.md#effects): the state the
 * earlier run's action brought about on its element (a panel expanded, a box ticked, a tab
 * selected), compared with the element's state before the replay does it.
 *
 * - the element is in the state the action left: the action is passed over (doing it again would
 *   undo it: a panel the app keeps open per user would be closed);
 * - it is in the state the earlier run found: the action is done;
 * - otherwise the step is repaired.
 *
 * The decision is made on the element's own state, read through the browser port; an element
 * whose state cannot be read now keeps the rule without effects (the action is done).
 */
import type { CachedEffect } from '../contract/run-cache.js';
import { describeState, holdsState, type ElementState } from '../domain/element-state.js';

export type EffectDecision = { kind: 'pass'; state: string } | { kind: 'do' } | { kind: 'repair'; reason: string };

/** What to do with an action of `effect`, its element being in state `now` (undefined: not readable). */
export function decideEffect(effect: CachedEffect, now: ElementState | undefined, element: string): EffectDecision {
  const keys = Object.keys(effect.after) as Array<keyof ElementState>;
  if (!now || keys.length === 0 || keys.some((key) => now[key] === undefined)) return { kind: 'do' };
  if (holdsState(now, effect.after)) return { kind: 'pass', state: describeState(effect.after) };
  if (holdsState(now, effect.before)) return { kind: 'do' };
  const shown: ElementState = Object.fromEntries(keys.map((key) => [key, now[key]]));
  return { kind: 'repair', reason: `${element} is ${describeState(shown)}, where the earlier run found it ${describeState(effect.before)} and left it ${describeState(effect.after)}` };
}
