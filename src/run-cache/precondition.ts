/**
 * A cached action's precondition on the page as it is now (docs/run-cache.md#replay): the same
 * page (URL without query values, numbers in the path set aside), the input values it depends on
 * as the entry allows (values.ts), the keyboard focus where typing went before, and the element it
 * acted on found again by role and accessible name, enabled. The replay checks it before each
 * action; a repair (repair.ts) asks it of the actions after the repaired one, to find where the
 * replay can go on, without running them.
 */
import type { BrowserSession, BrowserTab, ElementIdentity } from '../browser/types.js';
import { ExecutionError } from '../contract/errors.js';
import { enterText, enterValue, type InputSource } from '../domain/input-references.js';
import { formatPath, valueAt, type KeyPath } from '../contract/key-path.js';
import type { ActionSpace } from '../toolset/types.js';
import { browserCall } from '../agent/browser-call.js';
import { actionOf, describeElement, sameElement } from './actions.js';
import { numbersAside, pageShape, samePage } from './format.js';
import { GUARD_REASONS, guardMiss, type InputLeaf } from './values.js';
import type { ToolUseBlock } from '../contract/recording.js';
import type { CachedAction } from '../contract/run-cache.js';

/**
 * Why a precondition does not hold: the page or element is not there (`absent`: another page, a
 * renamed or removed element, the focus elsewhere, a disabled control), a value it may depend on
 * changed (`guard`), the new input has no value it entered (`no_value`), or it is never replayed.
 */
export type MissKind = 'absent' | 'guard' | 'no_value' | 'not_replayed';

export type Probe = { holds: true } | { holds: false; kind: MissKind; reason: string };

export interface PreconditionContext {
  session: BrowserSession;
  space: ActionSpace;
  /** The new input: its values by name, entered by the action space as the model's would be. */
  input: InputSource;
  /** The new input's values the model would see (no secrets), for the guards. */
  leaves: readonly InputLeaf[];
  /** The entry's fingerprint: the salt of its guards' digests. */
  salt: string;
  /** Input paths whose value differs from the entry's: what a failed guard's reason names. */
  changed?: readonly KeyPath[];
}

/** Tab ids and scripts are not checked against the page: those steps go back to the model. */
export const NOT_REPLAYED = new Set(['new_tab', 'switch_tab', 'close_tab', 'javascript_exec']);

/** What is checked before the page is read: the page, the kind of action, the input's values. */
export function checkAction(cached: CachedAction, ctx: PreconditionContext): Probe {
  const action = actionOf(cached);
  const shape = pageShape(ctx.session.currentUrl());
  if (!samePage(cached.page, shape)) return { holds: false, kind: 'absent', reason: `the page is ${shape}, where the earlier run was on ${cached.page}` };
  if (NOT_REPLAYED.has(action)) return { holds: false, kind: 'not_replayed', reason: `${action} steps are not replayed` };
  const missing = (cached.refs ?? []).find((path) => !isEnterable(valueAt(ctx.input.maskedPayload, path)));
  if (missing) return { holds: false, kind: 'no_value', reason: `the new input has no value at ${formatPath(missing)}, which the earlier run entered there` };
  const differs = cached.guard && guardMiss(cached.guard, ctx.leaves, ctx.salt, ctx.changed ?? []);
  if (cached.guard && differs) {
    return { holds: false, kind: 'guard', reason: `${GUARD_REASONS[cached.guard.why]}, and the new input differs at ${differs.map(formatPath).join(', ')}` };
  }
  return { holds: true };
}

/** The whole precondition, the page read included; nothing is run. */
export async function probeAction(cached: CachedAction, ctx: PreconditionContext, signal: AbortSignal): Promise<Probe> {
  const checked = checkAction(cached, ctx);
  if (!checked.holds) return checked;
  const prepared = await browserCall((cancel) => prepare(cached, ctx, 0, cancel), signal);
  return prepared.ok ? { holds: true } : { holds: false, kind: 'absent', reason: prepared.reason };
}

/** Whether an input value can be entered: text, a boolean, a finite number. */
export function isEnterable(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/** A value set by an action, to read back afterwards. */
export interface HoldCheckPlan {
  ref: string;
  value: unknown;
  how: 'set' | 'typed';
  element?: ElementIdentity;
}

export type Prepared = { ok: true; value: { call: ToolUseBlock; check?: HoldCheckPlan } } | { ok: false; reason: string };

/**
 * The call to make now: the cached one as the model made it (input values by name: the action
 * space enters the new input's values), its target found again on this page.
 */
export async function prepare(cached: CachedAction, ctx: Pick<PreconditionContext, 'session' | 'space' | 'input'>, n: number, signal: AbortSignal): Promise<Prepared> {
  const { session, space, input } = ctx;
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
