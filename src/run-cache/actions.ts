/**
 * Cached actions as the replay and the hand-over see them: what kind of action each is, whether
 * it enters a value, and how it is named in a reason (the element as the earlier run saw it).
 */
import type { ElementIdentity } from '../browser/types.js';
import type { CachedAction, CachedElement } from '../contract/run-cache.js';

/** An action of a cached run: its step and its place in the step (both from 0). */
export interface ActionAt {
  step: number;
  action: number;
}

/** Actions that are not worth replaying: the page's timing, not the task. */
export const SKIPPED = new Set(['wait', 'screenshot', 'zoom', 'cursor_position']);
/** Actions that enter a value in the page. */
export const SETS_VALUE = new Set(['form_input', 'type', 'file_upload', 'upload_file']);
/** Roles whose click enters a value: it toggles a state or picks a choice. */
export const PICKED = new Set(['checkbox', 'switch', 'menuitemcheckbox', 'radio', 'option', 'menuitemradio']);

export function actionOf(cached: CachedAction): string {
  return cached.toolsetName ? cached.tool : String(cached.input.action ?? cached.tool);
}

/** Whether an action enters a value: it sets or types one, or clicks a checkbox or a choice. */
export function entersValue(cached: CachedAction): boolean {
  return SETS_VALUE.has(actionOf(cached)) || (cached.target !== undefined && PICKED.has(cached.target.role) && !('value' in cached.input));
}

/**
 * Where a replay hands the values the earlier run never entered to the model: before the first
 * action after the earlier run's last value-entering action (so before a form is committed);
 * before that action when nothing follows it; before the first action when no action entered a value.
 */
export function afterLastEntry(steps: readonly CachedAction[][]): ActionAt {
  let last: ActionAt | undefined;
  steps.forEach((step, s) => step.forEach((cached, a) => {
    if (entersValue(cached)) last = { step: s, action: a };
  }));
  if (!last) return { step: 0, action: 0 };
  if (last.action + 1 < steps[last.step]!.length) return { step: last.step, action: last.action + 1 };
  if (last.step + 1 < steps.length && steps[last.step + 1]!.length > 0) return { step: last.step + 1, action: 0 };
  return last;
}

export function sameElement(a: Pick<CachedElement, 'role' | 'name'>, b: Pick<CachedElement, 'role' | 'name'>): boolean {
  const norm = (s: string | undefined) => (s ?? '').replace(/\s+/g, ' ').trim().toLowerCase();
  return a.role === b.role && norm(a.name) === norm(b.name);
}

export function describeElement(identity: ElementIdentity | CachedElement | undefined): string {
  if (!identity) return 'nothing';
  return `${identity.role}${identity.name ? ` "${identity.name}"` : ''}`;
}
