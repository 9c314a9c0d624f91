/**
 * Which values of a cached action came from the input (docs/run-cache.md#values-from-the-input):
 * the rule that keeps a replay from ever entering a value of the previous input. Pure.
 *
 * Every value an action enters (form_input's value, typed text, keys, a URL, file names) that
 * equals one value of the input — a string of any length, a number, a boolean, a choice, a date —
 * is stored as a tie to the input's path, never as the value, and the replay takes the new
 * input's value there. Where that is not certain, the action carries a guard: the input paths it
 * may depend on and a digest of their values in the cached run. The replay runs a guarded action
 * only when the new input holds the same values there (then the cached action is right as it is);
 * otherwise the model takes over at that step. A guard is set when
 *   - the value equals several input values (which one did the model mean?),
 *   - the value also appears in the specification's own text (the prompt's literal, or the input's?),
 *   - the value is a literal related to an input value (another case, a number or a date written
 *     otherwise, a value inside a longer text that cannot be templated),
 *   - the action toggles a checkbox or switch by a click while the input has yes/no values,
 *   - a choice (radio, option, tab) is picked by a name related to an input value it does not equal.
 */
import { createHash } from 'node:crypto';

/** One value of the input payload, as text, with its path (secrets are placeholders: never a leaf). */
export interface InputLeaf {
  path: string;
  value: string;
  kind: 'string' | 'number' | 'boolean';
}

/** A value of a cached action tied to an input path: filled with the new input's value, of the cached value's type. */
export interface InputTie {
  $input: string;
  as: 'string' | 'number' | 'boolean';
}

export interface ActionGuard {
  /** Input paths the action may depend on. */
  paths: string[];
  /** The cached run's values at those paths, hashed with the entry's fingerprint. */
  digest: string;
  why: 'several' | 'prompt' | 'literal' | 'toggle' | 'choice';
}

export interface TieContext {
  leaves: readonly InputLeaf[];
  /** The specification's own text (prompt and steps): a value found there may be its literal. */
  specText: string;
  /** Salt of the digests: the entry's fingerprint. */
  salt: string;
}

/** Keys of an action's input that carry what it enters. */
const VALUE_KEYS = new Set(['value', 'text', 'url', 'paths']);
/** Roles whose click toggles a state the input may decide. */
const TOGGLES = new Set(['checkbox', 'switch', 'menuitemcheckbox']);
/** Roles whose click picks a choice by its name. */
const CHOICES = new Set(['radio', 'option', 'menuitemradio', 'tab', 'checkbox', 'switch', 'menuitemcheckbox', 'treeitem', 'gridcell']);
const YES_NO = /^(true|false|yes|no|y|n|on|off|checked|unchecked)$/i;
const PLACEHOLDER = /^\{\{[^}]+\}\}$/;

export const GUARD_REASONS: Record<ActionGuard['why'], string> = {
  several: 'it enters a value that equalled several input values',
  prompt: "it enters a value that equalled both an input value and the specification's text",
  literal: 'it enters a value written from an input value',
  toggle: 'it toggles a checkbox while the input has yes/no values',
  choice: 'it picks a choice named after an input value',
};

/** Every value of the input with its path: strings of any length, numbers, booleans; never a secret's placeholder. */
export function inputLeaves(maskedInput: unknown): InputLeaf[] {
  const out: InputLeaf[] = [];
  const walk = (value: unknown, path: string[]) => {
    if (typeof value === 'string') {
      if (value.trim() !== '' && !PLACEHOLDER.test(value)) out.push({ path: path.join('.'), value, kind: 'string' });
    } else if (typeof value === 'number' && Number.isFinite(value)) out.push({ path: path.join('.'), value: String(value), kind: 'number' });
    else if (typeof value === 'boolean') out.push({ path: path.join('.'), value: String(value), kind: 'boolean' });
    else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, String(i)]));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  walk(maskedInput, []);
  // Longest first: a value that contains another is templated whole.
  return out.filter((v) => v.path !== '').sort((a, b) => b.value.length - a.value.length);
}

/** Replaces input values in text with `{{path}}` (whole values of 2+ characters, or parts of 4+ characters held by one path). */
export function templateText(text: string, leaves: readonly InputLeaf[]): string {
  let out = text;
  for (const { path, value } of leaves) {
    if (value.length < 2) continue;
    if (out === value) return `{{${path}}}`;
    if (value.length >= 4 && out.includes(value) && leaves.filter((l) => l.value === value).length === 1) out = out.split(value).join(`{{${path}}}`);
  }
  return out;
}

/** Every string in a JSON value templated. */
export function templateValue<T>(value: T, leaves: readonly InputLeaf[]): T {
  if (typeof value === 'string') return templateText(value, leaves) as T;
  if (Array.isArray(value)) return value.map((v) => templateValue(v, leaves)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templateValue(v, leaves)])) as T;
  return value;
}

export interface TiedAction {
  input: Record<string, unknown>;
  target?: Record<string, unknown>;
  focus?: Record<string, unknown>;
  guard?: ActionGuard;
}

/** An action as the cache keeps it: its entered values tied to input paths, its element names templated, and its guard. */
export function tieAction(action: { action: string; input: Record<string, unknown>; target?: Record<string, unknown>; focus?: Record<string, unknown> }, ctx: TieContext): TiedAction {
  const guards: Array<{ paths: string[]; why: ActionGuard['why'] }> = [];
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(action.input)) {
    input[key] = VALUE_KEYS.has(key) ? tieDeep(value, ctx, guards) : value;
  }
  const out: TiedAction = { input };
  if (action.target) out.target = tieElement(action.target, ctx, guards);
  if (action.focus) out.focus = tieElement(action.focus, ctx, guards);
  const role = typeof action.target?.role === 'string' ? action.target.role : '';
  if (TOGGLES.has(role) && !('value' in action.input)) {
    const yesNo = ctx.leaves.filter((l) => l.kind === 'boolean' || YES_NO.test(l.value) || l.value === '0' || l.value === '1');
    if (yesNo.length > 0) guards.push({ paths: yesNo.map((l) => l.path), why: 'toggle' });
  }
  if (guards.length > 0) {
    const paths = [...new Set(guards.flatMap((g) => g.paths))].sort();
    out.guard = { paths, digest: digestOf(paths, ctx.leaves, ctx.salt), why: guards[0]!.why };
  }
  return out;
}

function tieDeep(value: unknown, ctx: TieContext, guards: Array<{ paths: string[]; why: ActionGuard['why'] }>): unknown {
  if (Array.isArray(value)) return value.map((v) => tieDeep(v, ctx, guards));
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return value;
  const text = String(value);
  if (PLACEHOLDER.test(text)) return value;
  const exact = ctx.leaves.filter((l) => l.value === text);
  if (exact.length > 0) {
    if (exact.length > 1) guards.push({ paths: exact.map((l) => l.path), why: 'several' });
    else if (inSpec(text, ctx.specText)) guards.push({ paths: [exact[0]!.path], why: 'prompt' });
    const tie: InputTie = { $input: exact[0]!.path, as: typeof value as InputTie['as'] };
    return tie;
  }
  if (typeof value !== 'string') {
    const related = relatedPaths(text, ctx.leaves);
    if (related.length > 0) guards.push({ paths: related, why: 'literal' });
    return value;
  }
  const templated = templateText(value, ctx.leaves);
  const rest = templated.replace(/\{\{[^}]+\}\}/g, ' ');
  const related = relatedPaths(rest, ctx.leaves);
  if (related.length > 0) guards.push({ paths: related, why: 'literal' });
  return templated;
}

function tieElement(element: Record<string, unknown>, ctx: TieContext, guards: Array<{ paths: string[]; why: ActionGuard['why'] }>): Record<string, unknown> {
  const out = templateValue(element, ctx.leaves);
  const name = typeof element.name === 'string' ? element.name : '';
  if (name === '') return out;
  const exact = ctx.leaves.filter((l) => l.value.toLowerCase() === name.trim().toLowerCase());
  if (exact.length > 0) {
    out.name = `{{${exact[0]!.path}}}`;
    if (exact.length > 1) guards.push({ paths: exact.map((l) => l.path), why: 'several' });
    else if (inSpec(name, ctx.specText)) guards.push({ paths: [exact[0]!.path], why: 'prompt' });
  } else if (CHOICES.has(String(element.role)) || name.trim().length <= 3 || /^\d+$/.test(name.trim())) {
    // A choice, or a short name such as a calendar's day "4": clicked, it enters a value.
    const rest = String(out.name).replace(/\{\{[^}]+\}\}/g, ' ');
    const related = relatedPaths(rest, ctx.leaves);
    if (related.length > 0) guards.push({ paths: related, why: 'choice' });
  }
  return out;
}

/** Input paths whose value the text may have been written from, though it does not equal it. */
export function relatedPaths(text: string, leaves: readonly InputLeaf[]): string[] {
  const norm = squash(text).toLowerCase();
  if (norm === '') return [];
  const tokens = new Set(norm.split(/[^\p{L}\p{N}]+/u).filter(Boolean));
  const number = asNumber(text);
  const groups = (text.match(/\d+/g) ?? []).map(Number);
  const out: string[] = [];
  for (const leaf of leaves) {
    const value = squash(leaf.value).toLowerCase();
    const related =
      value === norm ||
      (leaf.kind === 'boolean' && YES_NO.test(norm)) ||
      (number !== undefined && asNumber(leaf.value) === number) ||
      isDateIn(leaf.value, groups, norm) ||
      tokens.has(value) ||
      (value.length >= 4 && norm.includes(value));
    if (related) out.push(leaf.path);
  }
  return out;
}

/** Whether the new input holds the same values at the guard's paths as the cached run did. */
export function guardHolds(guard: ActionGuard, maskedInput: unknown, salt: string): boolean {
  return digestOf(guard.paths, inputLeaves(maskedInput), salt) === guard.digest;
}

function digestOf(paths: readonly string[], leaves: readonly InputLeaf[], salt: string): string {
  const byPath = new Map(leaves.map((l) => [l.path, `${l.kind}:${l.value}`]));
  const pairs = paths.map((p) => [p, byPath.get(p) ?? null]);
  return createHash('sha256').update(salt).update('\0').update(JSON.stringify(pairs)).digest('hex').slice(0, 32);
}

/** Whether a value is written in the specification's own text, as a whole word. */
function inSpec(value: string, specText: string): boolean {
  const v = squash(value);
  if (v === '') return false;
  const escaped = v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'iu').test(specText);
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

export type Filled = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Fills a cached value with the new input: `{{path}}` in text, and input ties by their path, as
 * the cached value's type. Secret paths (and paths the input lacks, in text) keep their
 * placeholder: secrets are revealed where they are typed, as in any run. A tie the new input
 * cannot fill is a failure, never a guess.
 */
export function fillValues(value: unknown, maskedInput: unknown, secretPaths: readonly string[]): Filled {
  if (typeof value === 'string') return { ok: true, value: fillText(value, maskedInput, secretPaths) };
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const v of value) {
      const filled = fillValues(v, maskedInput, secretPaths);
      if (!filled.ok) return filled;
      out.push(filled.value);
    }
    return { ok: true, value: out };
  }
  if (value && typeof value === 'object') {
    if (isTie(value)) return fillTie(value, maskedInput);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const filled = fillValues(v, maskedInput, secretPaths);
      if (!filled.ok) return filled;
      out[k] = filled.value;
    }
    return { ok: true, value: out };
  }
  return { ok: true, value };
}

/** `{{path}}` in text filled with the new input's values; secret paths and paths the input lacks keep their placeholder. */
export function fillText(text: string, maskedInput: unknown, secretPaths: readonly string[]): string {
  return text.replace(/\{\{\s*([A-Za-z0-9_.\-[\]]+)\s*\}\}/g, (whole, path: string) => {
    const normalised = path.replace(/\[(\d+)\]/g, '.$1');
    if (secretPaths.includes(normalised)) return whole;
    const found = lookup(maskedInput, normalised);
    return typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean' ? String(found) : whole;
  });
}

function isTie(value: object): value is InputTie {
  const v = value as Partial<InputTie>;
  return typeof v.$input === 'string' && (v.as === 'string' || v.as === 'number' || v.as === 'boolean');
}

function fillTie(tie: InputTie, maskedInput: unknown): Filled {
  const found = lookup(maskedInput, tie.$input);
  if (typeof found !== 'string' && typeof found !== 'number' && typeof found !== 'boolean') return { ok: false, reason: `the new input has no value at ${tie.$input}` };
  if (typeof found === 'string' && PLACEHOLDER.test(found)) return { ok: false, reason: `${tie.$input} is a secret now` };
  if (tie.as === 'string') return { ok: true, value: String(found) };
  if (tie.as === 'number') {
    const n = typeof found === 'number' ? found : asNumber(String(found));
    return n === undefined || typeof found === 'boolean' ? { ok: false, reason: `the new input's ${tie.$input} is not a number` } : { ok: true, value: n };
  }
  if (typeof found === 'boolean') return { ok: true, value: found };
  if (found === 'true' || found === 'false') return { ok: true, value: found === 'true' };
  return { ok: false, reason: `the new input's ${tie.$input} is not true or false` };
}

function lookup(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
