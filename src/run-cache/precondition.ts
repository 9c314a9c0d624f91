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
import type { CachedAction, NamePart, ValueSource } from '../contract/run-cache.js';
import { enterText, enterValue, placeholderOf, type InputSource } from '../domain/input-references.js';
import { formatPath, valueAt, type KeyPath } from '../contract/key-path.js';
import type { ActionSpace } from '../toolset/types.js';
import { browserCall } from '../agent/browser-call.js';
import { actionOf, describeElement, sameElement } from './actions.js';
import { numbersAside, pageShape, samePage } from './format.js';
import { fillPattern, resolveSources } from './sources.js';
import { GUARD_REASONS, guardMiss, type InputLeaf } from './values.js';
import type { ToolUseBlock } from '../contract/recording.js';

/**
 * Why a precondition does not hold: the page or element is not there (`absent`: another page, a
 * renamed or removed element, the focus elsewhere, a disabled control), a value it may depend on
 * changed (`guard`), the new input has no value it entered (`no_value`), or it is never replayed.
 */
export type MissKind = 'absent' | 'guard' | 'no_value' | 'not_replayed';

/** `onPage`: an `absent` on the earlier run's page (its element is not found there, or not usable), not another page. */
export type Probe = { holds: true } | { holds: false; kind: MissKind; reason: string; onPage?: true };

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
  const missing = [...(cached.refs ?? []), ...fileAndDerivedPaths(cached)].find((path) => !isEnterable(valueAt(ctx.input.maskedPayload, path)));
  if (missing) return { holds: false, kind: 'no_value', reason: `the new input has no value at ${formatPath(missing)}, which the earlier run entered there` };
  const resolved = resolveSources(cached.input, cached.sources, ctx.input.maskedPayload);
  if (!resolved.ok) return { holds: false, kind: 'no_value', reason: resolved.reason };
  const pattern = patternSource(cached);
  if (pattern && fillPattern(pattern.parts, ctx.input.maskedPayload) === undefined) {
    return { holds: false, kind: 'no_value', reason: `the new input has no value for the name of ${describeElement(cached.target)}, which the earlier run's element was named after` };
  }
  const differs = cached.guard && guardMiss(cached.guard, ctx.leaves, ctx.salt, ctx.changed ?? []);
  if (cached.guard && differs) {
    return { holds: false, kind: 'guard', reason: `${GUARD_REASONS[cached.guard.why]}, and the new input differs at ${differs.map(formatPath).join(', ')}` };
  }
  return { holds: true };
}

/** Paths a derived or file source takes its value from: the new input must have one there too. */
function fileAndDerivedPaths(cached: CachedAction): KeyPath[] {
  return (cached.sources ?? []).flatMap(({ source }) => (source.kind === 'derived' ? [source.path] : []));
}

/** The whole precondition, the page read included; nothing is run. */
export async function probeAction(cached: CachedAction, ctx: PreconditionContext, signal: AbortSignal): Promise<Probe> {
  const checked = checkAction(cached, ctx);
  if (!checked.holds) return checked;
  const prepared = await browserCall((cancel) => prepare(cached, ctx, 0, cancel, 'probe'), signal);
  return prepared.ok ? { holds: true } : { holds: false, kind: 'absent', reason: prepared.reason, onPage: true };
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

export type Prepared = { ok: true; value: { call: ToolUseBlock; check?: HoldCheckPlan; ref?: string } } | { ok: false; reason: string };

/**
 * The call to make now: the cached one as the model made it (input values by name: the action
 * space enters the new input's values), its target found again on this page. `resume`: the
 * first action after a repair; `probe`: only whether it could be made, nothing on the page
 * changes (not even the focus).
 */
export async function prepare(cached: CachedAction, ctx: Pick<PreconditionContext, 'session' | 'space' | 'input'>, n: number, signal: AbortSignal, how: 'run' | 'resume' | 'probe' = 'run'): Promise<Prepared> {
  const { session, space, input } = ctx;
  const tab = session.tab();
  if (!tab) throw new ExecutionError('browser_error', 'the browser has no open tab');
  // Derived values and files computed from the new input (sources.ts); checkAction has made sure they can be.
  const resolved = resolveSources(cached.input, cached.sources, input.maskedPayload);
  if (!resolved.ok) return { ok: false, reason: resolved.reason };
  const args = resolved.input;
  const action = actionOf(cached);
  // What the field must hold afterwards: the new input's values, secrets left as their names (a read never shows them).
  const shown: InputSource = { ...input, reveal: (text) => text };
  let check: HoldCheckPlan | undefined;
  let ref: string | undefined;
  if (cached.focus) {
    const focused = await tab.focused(signal);
    if (!focused || !sameElement(focused.identity, cached.focus)) {
      // Right after a repair (which may have typed into another field), the element the
      // earlier run typed into is given the focus back when it is on the page, as that run had
      // it; a probe for where to resume only asks whether it could be (nothing is run).
      // Otherwise a focus elsewhere stops the replay, as the page is not as that run left it.
      const back = how === 'run' ? undefined : await tab.locate(cached.focus as ElementIdentity, signal);
      const given = back?.ok && back.value.enabled ? (how === 'probe' ? { ok: true as const } : await tab.focus(back.value.ref, signal)) : undefined;
      if (!given?.ok) return { ok: false, reason: `the keyboard focus is on ${describeElement(focused?.identity)}, where the earlier run typed into ${describeElement(cached.focus)}` };
    }
    const into = focused && sameElement(focused.identity, cached.focus) ? focused.identity : (cached.focus as ElementIdentity);
    if (action === 'type' && typeof args.text === 'string') {
      const found = await tab.locate(into, signal);
      if (found.ok) check = { ref: found.value.ref, value: enterText(shown, args.text).text, how: 'typed', element: into };
    }
  }
  if (cached.target) {
    const pattern = patternSource(cached);
    const identity = cached.target as ElementIdentity;
    const found = pattern ? await locateByPattern(tab, identity, pattern.parts, input.maskedPayload, signal) : await locateByShape(tab, identity, signal);
    if (!found.ok) return { ok: false, reason: found.error };
    if (!found.value.enabled) return { ok: false, reason: `${describeElement(identity)} is disabled` };
    ref = found.value.ref;
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
  return { ok: true, value: { call, ...(check ? { check } : {}), ...(ref ? { ref } : {}) } };
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

/** The name pattern a cached action's target is bound to (sources.ts), if any. */
function patternSource(cached: CachedAction): Extract<ValueSource, { kind: 'pattern' }> | undefined {
  const found = (cached.sources ?? []).find((b) => b.at === 'target')?.source;
  return found?.kind === 'pattern' ? found : undefined;
}

/**
 * The element named after the new input (`Invoice #{{number}} from {{vendor}}`): exactly one
 * element of the cached role whose name is the pattern filled with it (compared without case
 * and extra spaces; numbers of the pattern's own text set aside, a record's id, the earlier
 * number no better than another); several are one when the earlier element's kind and place tell
 * them apart (oneOfNamesakes); none, or several that nothing tells apart, and the step is repaired.
 */
async function locateByPattern(tab: BrowserTab, cached: ElementIdentity, parts: readonly NamePart[], payload: unknown, signal: AbortSignal): ReturnType<BrowserTab['locate']> {
  const filled = fillPattern(parts, payload);
  const what = `${cached.role} named after the input (${parts.map((p) => ('text' in p ? p.text : placeholderOf(p.path))).join('')})`;
  if (filled === undefined) return { ok: false, error: `the new input has no value for the ${what}` };
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();
  const exact = norm(filled);
  // The pattern's own numbers that are the earlier record's id (in its address too: "Invoice #5"
  // leading to /invoice/5/) may be another record's now; the input's values may not, nor a number
  // the address does not hold ("Room 101", "Q3 2026"), which stays as it was written.
  // The earlier id is no better than another: the earlier run's record may still be listed beside the new one.
  const ids = recordIds(cached.href);
  const shape = parts.some((p) => 'text' in p && [...p.text.matchAll(/\d+/g)].some((m) => ids.has(m[0]))) ? patternShape(parts, payload, ids) : undefined;
  const named = (name: string) => (shape ? shape.test(norm(name)) : norm(name) === exact);
  const lines = await tab.find((candidates) => candidates.filter((c) => c.role === cached.role && named(c.name)).map((c) => c.i), NAMESAKES, signal);
  if (lines.length === 0) return { ok: false, error: `no ${what} on the page` };
  const refs = lines.map((line) => /\[(ref_\d+)\]/.exec(line)?.[1]);
  if (refs.some((r) => r === undefined)) return { ok: false, error: `the ${what} has no reference` };
  const identities: ElementIdentity[] = [];
  for (const ref of refs) {
    const other = await tab.identify(ref!, signal);
    if (!other.ok) return { ok: false, error: other.error };
    identities.push(other.value);
  }
  const chosen = identities.length === 1 ? identities[0] : oneOfNamesakes(cached, identities);
  if (!chosen) return { ok: false, error: `more than one ${what} on the page` };
  return tab.locate(chosen, signal);
}

/** How many elements of the filled name are looked at: a record's link is seldom on a page more than a few times. */
const NAMESAKES = 8;

/**
 * One of several elements named after the input (a record's link in the list and again in the
 * message that it was added): the one of the earlier element's kind (tag, type, link target with
 * numbers aside) at its place in the page; else, when every one of its kind leads to the same
 * address, the first of them (a link repeated is one choice). Otherwise none: nothing is guessed.
 */
export function oneOfNamesakes(cached: ElementIdentity, found: readonly ElementIdentity[]): ElementIdentity | undefined {
  const kind = found.filter((e) => e.tag === cached.tag && e.type === cached.type && (!cached.href || (e.href !== undefined && numbersAside(e.href) === numbersAside(cached.href))));
  if (kind.length === 1) return kind[0];
  if (kind.length === 0) return undefined;
  const placed = cached.path ? kind.filter((e) => e.path === cached.path) : [];
  if (placed.length === 1) return placed[0];
  const hrefs = new Set(kind.map((e) => e.href));
  return hrefs.size === 1 && kind[0]!.href ? kind[0] : undefined;
}

/** The numbers of an element's address (a record's id in `/invoice/5/change/`): the only numbers of a name pattern's own text that may be another's. */
export function recordIds(href: string | undefined): Set<string> {
  if (!href) return new Set();
  let path = href;
  try {
    const url = new URL(href, 'http://x.invalid/');
    path = `${url.pathname}${url.search}`;
  } catch {
    // Not a URL: its numbers as they are.
  }
  return new Set([...path.matchAll(/\d+/g)].map((m) => m[0]));
}

/** A pattern's filled name as a regular expression with the numbers of its own text that are the earlier record's id free. */
export function patternShape(parts: readonly NamePart[], payload: unknown, ids: ReadonlySet<string>): RegExp | undefined {
  let source = '';
  for (const part of parts) {
    if ('text' in part) source += part.text.replace(/\s+/g, ' ').toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\d+/g, (n) => (ids.has(n) ? '\\d+' : n));
    else {
      const value = valueAt(payload, part.path);
      if (value === undefined || value === null || typeof value === 'object') return undefined;
      source += String(value).replace(/\s+/g, ' ').toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source.trim()}$`);
}

/** A cached action as the earlier run did it, for a reason and the hand-over: `left_click on button "Place order"`. */
export function describeAction(cached: CachedAction): string {
  const action = actionOf(cached);
  if (cached.target) return `${action} on ${describeElement(cached.target)}`;
  if (cached.focus) return `${action} into ${describeElement(cached.focus)}`;
  return action;
}
