/**
 * Which input values a cached action depends on (docs/run-cache.md#values-from-the-input): the
 * rule that keeps a replay from ever entering a value of the previous input. Pure.
 *
 * A value is tied to an input path only when the model entered it by reference, writing the
 * value's name `{{path}}` (domain/input-references.ts): the cached action keeps the name, and the
 * replay enters the new input's value there. Nothing else ties a value to the input — equality
 * can be a coincidence (a checkbox ticked `true` while an unrelated boolean of the input was
 * `true`). A value the model wrote itself (a literal) and entered gives its action a guard on
 * every input value it did not enter by name, with a salted digest of their values in the cached
 * run: it may have been computed from any of them, in any form. A guarded action replays only
 * when the new input holds the same values there; otherwise that step is repaired. A literal that
 * enters no value (a key, a URL) and a click on an element named like an input value are guarded
 * on the values they may come from; a click that toggles a checkbox, on the input's yes/no values.
 *
 * Paths are key paths (arrays of keys, contract/key-path.ts): any key, dotted or `__proto__`,
 * round-trips, and no key reaches a prototype.
 */
import { createHash } from 'node:crypto';
import type { ActionGuard, InputDigest } from '../contract/run-cache.js';
import { placeholdersIn, secretPathsOf, type InputSource } from '../domain/input-references.js';
import { leavesOf, pathId, valueAt, type KeyPath } from '../contract/key-path.js';
import { PICKED, SETS_VALUE } from './actions.js';

/** One value of the input as the model saw it (never a secret: those are entered by name only). */
export interface InputLeaf {
  path: KeyPath;
  /** The value as text (empty for null). */
  value: string;
  kind: 'string' | 'number' | 'boolean' | 'null';
}

export const GUARD_REASONS: Record<ActionGuard['why'], string> = {
  literal: 'it enters a value the model wrote itself, not by name, which any value of the input may have decided',
  derived: 'it enters a value the model wrote itself that may come from the input',
  toggle: 'it toggles a checkbox while the input has yes/no values',
  named: 'it acts on an element named like an input value',
};

/** Keys of an action's input that carry what it enters. */
const VALUE_KEYS = new Set(['value', 'text', 'url', 'paths']);
/** Roles whose click toggles a state the input may decide. */
const TOGGLES = new Set(['checkbox', 'switch', 'menuitemcheckbox']);
/** Roles whose click picks a choice by its name. */
const CHOICES = new Set(['radio', 'option', 'menuitemradio', 'tab', 'checkbox', 'switch', 'menuitemcheckbox', 'treeitem', 'gridcell']);
const YES_NO = /^(true|false|yes|no|y|n|on|off|checked|unchecked)$/i;

/** Every value of the input the model was shown, with its path; secrets are left out. */
export function inputLeaves(input: Pick<InputSource, 'maskedPayload' | 'paths'>): InputLeaf[] {
  const secrets = new Set(secretPathsOf(input).map(pathId));
  return leavesOf(input.maskedPayload)
    .filter((leaf) => leaf.path.length > 0 && !secrets.has(pathId(leaf.path)) && !(typeof leaf.value === 'number' && !Number.isFinite(leaf.value)))
    .map(({ path, value }) => ({ path, value: value === null ? '' : String(value), kind: value === null ? 'null' : (typeof value as InputLeaf['kind']) }));
}

/** Each input value of a run as a salted digest: what a later run compares its input with. */
export function inputDigests(leaves: readonly InputLeaf[], salt: string): InputDigest[] {
  return leaves.map((leaf) => ({ path: leaf.path, digest: digestOf([leaf.path], leaves, salt) }));
}

/** Input paths whose value differs between a cached run (its digests) and the new input: changed, added or gone. */
export function changedPaths(cached: readonly InputDigest[], now: readonly InputLeaf[], salt: string): KeyPath[] {
  const before = new Map(cached.map((d) => [pathId(d.path), d]));
  const out: KeyPath[] = [];
  for (const leaf of now) {
    const was = before.get(pathId(leaf.path));
    if (!was || was.digest !== digestOf([leaf.path], now, salt)) out.push(leaf.path);
    before.delete(pathId(leaf.path));
  }
  return [...out, ...[...before.values()].map((d) => d.path)];
}

export interface TieContext {
  /** The run's input as the model saw it (secrets as their names), and the secrets' names. */
  input: Pick<InputSource, 'maskedPayload' | 'paths'>;
  leaves: readonly InputLeaf[];
  /** Salt of the digests: the entry's fingerprint. */
  salt: string;
}

export interface TiedAction {
  /** Input paths the action entered by reference (`{{path}}` naming a value of the input), secrets included. */
  refs: KeyPath[];
  guard?: ActionGuard;
}

/**
 * What a cached action depends on: the input paths it entered by reference, and a guard for the
 * literals it entered and the element names it acted on that may come from the input.
 *
 * An action that enters a value (SETS_VALUE: it types, sets a field or uploads) and holds anything
 * the model wrote itself — text around or instead of `{{path}}` names, a boolean, a number, a file
 * name — is guarded on every input value it did not enter by name: whatever the model computed
 * the literal from (a name reversed, a number in a locale's format, a date spelled out), a change
 * there stops the replay at it. That holds by construction, not by recognising the forms a value
 * can be written in; the recognisers (derivedPaths) only say which values it most likely came
 * from (`from`, for the reason shown), and add the values it named that its own text repeats.
 * A click that ticks a box or picks a choice (actions.ts PICKED) enters a value no name can stand
 * for, and is guarded the same way, unless the input names the element (a pattern, sources.ts):
 * a click on it, or a `form_input` ticking it (`true`), is the pattern's. Other actions (a key, a URL to open, a click on a button or a
 * link) keep the recognisers: a click on "Save" replays whatever the input, one on an element
 * named like an input value does not.
 */
export function tieAction(action: { action: string; input: Record<string, unknown>; target?: { role?: unknown; name?: unknown }; focus?: { role?: unknown; name?: unknown } }, ctx: TieContext, bound: Bound = NONE_BOUND): TiedAction {
  const refs = new Map<string, KeyPath>();
  const guards: Array<{ paths: KeyPath[]; why: ActionGuard['why']; from: KeyPath[] }> = [];
  const derived: KeyPath[] = [];
  /** Literal texts the model wrote (names set aside), and whether it wrote any value itself. */
  const literals: string[] = [];
  let wroteValue = false;
  const visit = (value: unknown, key: string): void => {
    if (Array.isArray(value)) return value.forEach((v) => visit(v, key));
    // A value bound to its source (sources.ts) is computed from it: nothing of it is the model's own.
    if (bound.keys.has(key)) {
      if (typeof value === 'string') for (const ph of placeholdersIn(value)) if (isLeafValue(valueAt(ctx.input.maskedPayload, ph.path))) refs.set(pathId(ph.path), ph.path);
      return;
    }
    if (typeof value === 'boolean') {
      wroteValue = true;
      // Never tied by equality, whatever it equals: any yes/no value of the input may have decided it.
      derived.push(...ctx.leaves.filter(isYesNo).map((l) => l.path));
    } else if (typeof value === 'number') {
      wroteValue = true;
      literals.push(String(value));
      derived.push(...derivedPaths(String(value), ctx.leaves));
    } else if (typeof value === 'string') {
      let literal = '';
      let last = 0;
      let named = 0;
      for (const ph of placeholdersIn(value)) {
        const at = valueAt(ctx.input.maskedPayload, ph.path);
        if (typeof at !== 'string' && typeof at !== 'number' && typeof at !== 'boolean') continue;
        refs.set(pathId(ph.path), ph.path);
        named++;
        literal += `${value.slice(last, ph.start)} `;
        last = ph.end;
      }
      literal += value.slice(last);
      // Entirely names (spacing between them aside) is the input's; anything else, "" included, the model's.
      if (named === 0 || literal.trim() !== '') wroteValue = true;
      literals.push(literal);
      derived.push(...derivedPaths(literal, ctx.leaves));
    }
  };
  const targetRole = typeof action.target?.role === 'string' ? action.target.role : '';
  for (const [key, value] of Object.entries(action.input)) {
    if (!VALUE_KEYS.has(key)) continue;
    // A box ticked or a choice picked (`true`) on the element the input names (a pattern,
    // sources.ts): the tick is the pattern's, as a click on that element is; unticking is not.
    if (key === 'value' && value === true && bound.target && PICKED.has(targetRole)) continue;
    visit(value, key);
  }
  // A click that ticks a box or picks a choice enters a value no name can stand for: the model's own, too.
  if (!SETS_VALUE.has(action.action) && PICKED.has(targetRole) && !('value' in action.input) && !bound.target) wroteValue = true;
  if ((SETS_VALUE.has(action.action) || PICKED.has(targetRole)) && wroteValue) {
    // The values it entered by name come in with the new input; the rest may have decided what it wrote.
    const others = ctx.leaves.filter((leaf) => !refs.has(pathId(leaf.path))).map((leaf) => leaf.path);
    guards.push({ paths: [...others, ...derived], why: derived.length > 0 ? 'derived' : 'literal', from: derived });
  } else if (derived.length > 0) guards.push({ paths: derived, why: 'derived', from: derived });
  for (const element of bound.target ? [action.focus] : [action.target, action.focus]) {
    const name = typeof element?.name === 'string' ? element.name : '';
    if (name.trim() === '') continue;
    const role = String(element?.role ?? '');
    // A choice, or a short name such as a calendar's day "4", is clicked for what its name says.
    // A name that is a piece of a value is not counted: "Create" is a word of many subjects.
    const named = derivedPaths(name, ctx.leaves, { shortValues: CHOICES.has(role) || name.trim().length <= 3, pieces: false });
    if (named.length > 0) guards.push({ paths: named, why: 'named', from: named });
  }
  const role = typeof action.target?.role === 'string' ? action.target.role : '';
  if (TOGGLES.has(role) && !('value' in action.input) && !bound.target) {
    const yesNo = ctx.leaves.filter(isYesNo).map((l) => l.path);
    if (yesNo.length > 0) guards.push({ paths: yesNo, why: 'toggle', from: yesNo });
  }
  const out: TiedAction = { refs: [...refs.values()] };
  if (guards.length > 0) {
    const paths = sortedUnique(guards.flatMap((g) => g.paths));
    const from = sortedUnique(guards.flatMap((g) => g.from));
    // The reason names what the action most likely depends on; `literal` only when nothing more is known.
    const why = (guards.find((g) => g.why !== 'literal') ?? guards[0]!).why;
    out.guard = { paths, digest: digestOf(paths, ctx.leaves, ctx.salt), why, ...(from.length > 0 && from.length < paths.length ? { from } : {}) };
  }
  return out;
}

/** What of an action is bound to a source (sources.ts): its keys so bound, and whether its target's name is a pattern. */
export interface Bound {
  keys: ReadonlySet<string>;
  target: boolean;
}

const NONE_BOUND: Bound = { keys: new Set(), target: false };

function isLeafValue(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function sortedUnique(paths: readonly KeyPath[]): KeyPath[] {
  const unique = new Map(paths.map((p) => [pathId(p), p]));
  return [...unique.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
}

/**
 * The input paths to name when a guard does not hold (undefined when it holds): those of its
 * paths whose value changed (`changed`, from the entry's digests), the ones the action most
 * likely came from first; a guard carried from an older entry may differ from the entry's
 * digests, and then all its likely sources are named.
 */
export function guardMiss(guard: ActionGuard, leaves: readonly InputLeaf[], salt: string, changed: readonly KeyPath[]): KeyPath[] | undefined {
  if (guardHolds(guard, leaves, salt)) return undefined;
  const moved = new Set(changed.map(pathId));
  const likely = (guard.from ?? guard.paths).filter((p) => moved.has(pathId(p)));
  if (likely.length > 0) return likely;
  const any = guard.paths.filter((p) => moved.has(pathId(p)));
  return any.length > 0 ? any : [...(guard.from ?? guard.paths)];
}

/** An input value that may decide a tick: a boolean, a yes/no word, or 0 and 1. */
function isYesNo(leaf: InputLeaf): boolean {
  const value = leaf.value.trim();
  return leaf.kind === 'boolean' || YES_NO.test(value) || value === '0' || value === '1';
}

/**
 * Input paths a text may have been written from: it equals the value (in another case or
 * spacing), is a piece of it (a word or more, or 4 characters or more: "Kofi" of "Kofi Mensah"),
 * holds it (a value of 4 characters or more, or a shorter one as a whole word when `shortValues`),
 * is the same number written otherwise (`7.00`, `1,234.50`), the same date in another format
 * (`04/03/2026`, or a day a date picker is clicked by), or a yes/no word where the value is a boolean.
 * `pieces: false` leaves out the pieces; `shortValues: false` the short values held as words.
 */
export function derivedPaths(text: string, leaves: readonly InputLeaf[], options: { shortValues?: boolean; pieces?: boolean } = {}): KeyPath[] {
  const shortValues = options.shortValues ?? true;
  const pieces = options.pieces ?? true;
  const forms = new Set([squash(text).toLowerCase()]);
  // A value in a URL is percent-encoded.
  try {
    forms.add(squash(decodeURIComponent(text.replace(/\+/g, ' '))).toLowerCase());
  } catch {
    // Not an encoded text: its plain form is enough.
  }
  const out: KeyPath[] = [];
  for (const leaf of leaves) {
    if (leaf.kind === 'null' || leaf.value.trim() === '') continue;
    if ([...forms].some((norm) => norm !== '' && relates(norm, text, leaf, shortValues, pieces))) out.push(leaf.path);
  }
  return out;
}

function relates(norm: string, raw: string, leaf: InputLeaf, shortValues: boolean, pieces: boolean): boolean {
  const value = squash(leaf.value).toLowerCase();
  if (value === norm) return true;
  if (leaf.kind === 'boolean' && YES_NO.test(norm)) return true;
  const number = asNumber(raw);
  if (number !== undefined && asNumber(leaf.value) === number) return true;
  if (isDateIn(leaf.value, (raw.match(/\d+/g) ?? []).map(Number), norm)) return true;
  if (value.length >= 4 ? norm.includes(value) : shortValues && words(norm).includes(value)) return true;
  return pieces && pieceOf(norm, value);
}

/** Whether a text is a piece of a value: 4 characters or more of it, or 3 or more beginning a word of it. */
function pieceOf(norm: string, value: string): boolean {
  if (norm.length < 3 || norm.length >= value.length) return false;
  if (norm.length >= 4) return value.includes(norm);
  for (let at = value.indexOf(norm); at >= 0; at = value.indexOf(norm, at + 1)) {
    if (at === 0 || !/[\p{L}\p{N}]/u.test(value[at - 1]!)) return true;
  }
  return false;
}

function words(text: string): string[] {
  return text.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

/** Whether the new input holds the same values at the guard's paths as the cached run did. */
export function guardHolds(guard: ActionGuard, leaves: readonly InputLeaf[], salt: string): boolean {
  return digestOf(guard.paths, leaves, salt) === guard.digest;
}

function digestOf(paths: readonly KeyPath[], leaves: readonly InputLeaf[], salt: string): string {
  const byPath = new Map(leaves.map((l) => [pathId(l.path), `${l.kind}:${l.value}`]));
  const pairs = paths.map((p) => [p, byPath.get(pathId(p)) ?? null]);
  return createHash('sha256').update(salt).update('\0').update(JSON.stringify(pairs)).digest('hex').slice(0, 32);
}

function squash(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** A number however it is written: `1,234.50`, `€ 7`, `7.00`. */
function asNumber(text: string): number | undefined {
  const cleaned = text.trim().replace(/[\s,_'€$£¥%]/g, '');
  if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(cleaned)) return undefined;
  return Number(cleaned);
}

/**
 * Whether an ISO date (YYYY-MM-DD…) shows in the text's number groups as another format would
 * write it (`04/03/2026`), or the text is a part of it a date picker is clicked by (`4`, `2026`).
 */
function isDateIn(value: string, groups: readonly number[], text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(value);
  if (!m || groups.length === 0) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (groups.length >= 3) return (groups.includes(y) || groups.includes(y % 100)) && groups.includes(mo) && groups.includes(d);
  return /^[\d\s/.-]+$/.test(text) && groups.every((g) => g === y || g === mo || g === d);
}
