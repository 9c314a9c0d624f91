/**
 * Where a value a cached action entered comes from (docs/run-cache.md#sources), and how the
 * replay computes it again from the new input. Pure.
 *
 * When the cache is written, each value the model entered is bound to exactly one source, or to
 * none: an input path (entered by name), a constant of the version (text of its prompt or steps
 * that is in no input value), one derivation of one input value from a closed set (derive.ts), a
 * name pattern over the input for the element it acted on, an input file by its path. A literal
 * that fits no source, or more than one, is left unbound and keeps its guard (values.ts): the
 * replay enters it only while the input is the same there. A derived or file source takes its
 * key out of the cached input, so the earlier input's literal is not in the entry to replay.
 */
import type { NamePart, ValueBinding, ValueSource } from '../contract/run-cache.js';
import { placeholdersIn } from '../domain/input-references.js';
import { formatPath, pathId, valueAt, type KeyPath } from '../contract/key-path.js';
import { deriveValue, derivationsOf, pieceCount } from './derive.js';
import { derivedPaths, type InputLeaf } from './values.js';

export interface SourceContext {
  /** The run's input as the model saw it (secrets as their names). */
  payload: unknown;
  leaves: readonly InputLeaf[];
  /** The version's own text: its prompt and steps. */
  constants: string;
}

/** An action as the cache writes it: what it did, its input, the element it acted on. */
export interface BindableAction {
  action: string;
  input: Record<string, unknown>;
  target?: { role?: unknown; name?: unknown };
}

export interface Bound {
  /** The action's input with the keys a derived or file source stands in for taken out. */
  input: Record<string, unknown>;
  sources: ValueBinding[];
}

/** The shortest literal bound to a derivation. */
const MIN_DERIVED_CHARS = 3;
/** Keys of an action's input that carry a value it enters. */
const ENTERED_KEYS = ['text', 'value'] as const;
/** Roles whose name a pattern may bind: what a person clicks by its name. */
const NAMED_ROLES = new Set(['link', 'row', 'checkbox', 'option', 'gridcell', 'cell', 'button', 'menuitem', 'menuitemcheckbox', 'radio', 'treeitem', 'switch', 'listitem', 'tab']);

/** The sources of an action's values and target; what fits no source (or several) is left out. */
export function bindAction(action: BindableAction, ctx: SourceContext, entersValue: boolean): Bound {
  const input = { ...action.input };
  const sources: ValueBinding[] = [];
  if (entersValue) {
    for (const key of ENTERED_KEYS) {
      const value = input[key];
      if (typeof value !== 'string') continue;
      const source = sourceOfText(value, ctx);
      // A value entered by name alone is the entry's `refs` already.
      if (!source || (source.length === 1 && source[0]!.kind === 'input')) continue;
      sources.push(...source.map((s) => ({ at: key, source: s })));
      if (source.some((s) => s.kind === 'derived')) delete input[key];
    }
    const files = fileSource(input.paths, ctx);
    if (files) {
      sources.push({ at: 'paths', source: files });
      delete input.paths;
    }
  }
  const pattern = patternOf(action.target, ctx);
  if (pattern) sources.push({ at: 'target', source: pattern });
  return { input, sources };
}

/**
 * The sources of a text: names (`{{path}}`) and the text around them as a constant; or, for a
 * text with no name, a constant or one derivation of one input value. Undefined: unbound.
 */
export function sourceOfText(text: string, ctx: SourceContext): ValueSource[] | undefined {
  const names = placeholdersIn(text).filter((ph) => isEntered(valueAt(ctx.payload, ph.path)));
  if (names.length > 0) {
    let rest = '';
    let last = 0;
    for (const ph of names) {
      rest += `${text.slice(last, ph.start)}\n`;
      last = ph.end;
    }
    rest += text.slice(last);
    const out: ValueSource[] = [{ kind: 'input', paths: uniquePaths(names.map((ph) => ph.path)) }];
    if (rest.trim() === '') return out;
    return isConstant(rest, ctx) ? [...out, { kind: 'constant', text: rest.split('\n').join('') }] : undefined;
  }
  const constant = isConstant(text, ctx);
  // Never two sources: a text of the prompt that a value also gives is neither's.
  const derived = ctx.constants.includes(text.trim()) ? undefined : derivedSource(text, ctx);
  if (constant) return [{ kind: 'constant', text }];
  if (derived && !text.includes('{{')) return [derived];
  return undefined;
}

/**
 * Whether a text the model wrote (names set aside: the `\n`s) is the version's: every run of
 * letters or digits in it is in the prompt or steps, and none is in, holds or writes an input value.
 */
export function isConstant(text: string, ctx: SourceContext): boolean {
  const chunks = text.split('\n').map((c) => c.trim()).filter((c) => /[\p{L}\p{N}]/u.test(c));
  // Spacing and punctuation between names are nobody's value, unless a value is just that.
  if (chunks.length === 0) return text.trim() === '' || !related(text.replace(/\n/g, '').trim(), ctx);
  return chunks.every((chunk) => ctx.constants.includes(chunk) && !related(chunk, ctx));
}

function related(chunk: string, ctx: SourceContext): boolean {
  const lower = chunk.toLowerCase();
  return derivedPaths(chunk, ctx.leaves).length > 0 || ctx.leaves.some((leaf) => leaf.value.trim() !== '' && leaf.value.toLowerCase().includes(lower));
}

/** The one derivation of one input value that gives the text, when there is exactly one and no other value relates to it. */
function derivedSource(text: string, ctx: SourceContext): ValueSource | undefined {
  // A literal shorter than 3 characters (`1`, `no`) equals too many things by chance to be bound to one.
  if (text.trim().length < MIN_DERIVED_CHARS) return undefined;
  const found: ValueSource[] = [];
  for (const leaf of ctx.leaves) {
    if (leaf.kind !== 'string' && leaf.kind !== 'number') continue;
    for (const derivation of derivationsOf(leaf.value, text)) found.push({ kind: 'derived', path: leaf.path, derivation });
  }
  if (found.length !== 1) return undefined;
  const only = found[0] as Extract<ValueSource, { kind: 'derived' }>;
  // A value of the input it may come from in a way the closed set does not say makes it two sources.
  const loose = derivedPaths(text, ctx.leaves).filter((p) => pathId(p) !== pathId(only.path));
  return loose.length === 0 ? only : undefined;
}

/** Upload paths that are each one input file's name: bound by their input paths. */
function fileSource(paths: unknown, ctx: SourceContext): ValueSource | undefined {
  if (!Array.isArray(paths) || paths.length === 0) return undefined;
  const files = ctx.leaves.filter((leaf) => leaf.path[leaf.path.length - 1] === '$file');
  const out: KeyPath[] = [];
  for (const name of paths) {
    const matches = files.filter((leaf) => leaf.value === name);
    if (typeof name !== 'string' || matches.length !== 1) return undefined;
    out.push(matches[0]!.path.slice(0, -1));
  }
  return { kind: 'file', paths: out };
}

/**
 * A target's name as a pattern over the input: each input value in it (whole, a number as a word)
 * an input part, the rest text of the version's pages. Unbound when no value is in it, when two
 * values overlap in it or one is in it twice, or when the text around them relates to a value.
 */
export function patternOf(target: BindableAction['target'], ctx: SourceContext): ValueSource | undefined {
  const name = typeof target?.name === 'string' ? target.name : '';
  const role = typeof target?.role === 'string' ? target.role : '';
  if (name.trim() === '' || !NAMED_ROLES.has(role)) return undefined;
  const lower = name.toLowerCase();
  const spans: Array<{ start: number; end: number; path: KeyPath }> = [];
  for (const leaf of ctx.leaves) {
    if (leaf.kind !== 'string' && leaf.kind !== 'number') continue;
    const value = leaf.value.trim().toLowerCase();
    if (value.length < 2 && leaf.kind !== 'number') continue;
    if (value === '' || /[\n{}]/.test(value)) continue;
    const at = occurrences(lower, value, leaf.kind === 'number' || value.length < 4);
    if (at.length > 1) return undefined;
    if (at.length === 1) spans.push({ start: at[0]!, end: at[0]! + value.length, path: leaf.path });
  }
  if (spans.length === 0) return undefined;
  spans.sort((a, b) => a.start - b.start);
  for (let i = 1; i < spans.length; i++) if (spans[i]!.start < spans[i - 1]!.end) return undefined;
  const parts: NamePart[] = [];
  let last = 0;
  for (const span of spans) {
    if (span.start > last) parts.push({ text: name.slice(last, span.start) });
    parts.push({ path: span.path });
    last = span.end;
  }
  if (last < name.length) parts.push({ text: name.slice(last) });
  const texts = parts.flatMap((p) => ('text' in p ? [p.text] : []));
  if (texts.some((t) => derivedPaths(t, ctx.leaves, { pieces: false, shortValues: false }).length > 0)) return undefined;
  return { kind: 'pattern', parts };
}

/** Where a value is in a name: anywhere, or only as a whole word (`asWord`). */
function occurrences(name: string, value: string, asWord: boolean): number[] {
  const out: number[] = [];
  const boundary = (i: number) => i < 0 || i >= name.length || !/[\p{L}\p{N}]/u.test(name[i]!);
  for (let at = name.indexOf(value); at >= 0; at = name.indexOf(value, at + 1)) {
    if (!asWord || (boundary(at - 1) && boundary(at + value.length))) out.push(at);
  }
  return out;
}

/** The name a pattern gives with an input; undefined when the input has no value for a part. */
export function fillPattern(parts: readonly NamePart[], payload: unknown): string | undefined {
  let out = '';
  for (const part of parts) {
    if ('text' in part) out += part.text;
    else {
      const value = valueAt(payload, part.path);
      if (!isEntered(value) || typeof value === 'boolean') return undefined;
      out += String(value);
    }
  }
  return out;
}

/** A piece of a value the new input does not have: the replay passes its action over and says so. */
export interface MissingPiece {
  path: KeyPath;
  unit: 'line' | 'paragraph' | 'item';
  index: number;
}

export type Resolved = { ok: true; input: Record<string, unknown> } | { ok: false; reason: string; piece?: MissingPiece };

/**
 * The cached action's input with each derived and file source computed from the new input (the
 * action space enters names itself, as the model's). A source the new input cannot give stops
 * the replay there; a piece it does not have is passed over.
 */
export function resolveSources(input: Record<string, unknown>, sources: readonly ValueBinding[] | undefined, payload: unknown): Resolved {
  const out = structuredClone(input);
  for (const { at, source } of sources ?? []) {
    if (source.kind === 'derived' && at !== 'target') {
      const value = valueAt(payload, source.path);
      if (typeof value !== 'string' && (typeof value !== 'number' || !Number.isFinite(value))) return { ok: false, reason: `the new input has no value at ${formatPath(source.path)}, which the earlier run's value there was derived from` };
      const d = source.derivation;
      const derived = deriveValue(String(value), d);
      if (derived === undefined) {
        if (d.how === 'piece') return { ok: false, reason: `the new input's ${formatPath(source.path)} has no ${d.unit} ${d.index + 1}`, piece: { path: source.path, unit: d.unit, index: d.index } };
        return { ok: false, reason: `the new input's ${formatPath(source.path)} gives no ${d.how} as the earlier run derived it` };
      }
      // A derived text is entered as it is: never read for names (a value holding `{{…}}` is not derived).
      if (derived.includes('{{')) return { ok: false, reason: `the new input's ${formatPath(source.path)} holds "{{", which a derived value cannot` };
      out[at] = derived;
    } else if (source.kind === 'file') {
      const names: string[] = [];
      for (const path of source.paths) {
        const name = valueAt(payload, [...path, '$file']);
        if (typeof name !== 'string' || name === '') return { ok: false, reason: `the new input has no file at ${formatPath(path)}, which the earlier run uploaded` };
        names.push(name);
      }
      out[at] = names;
    }
  }
  return { ok: true, input: out };
}

/**
 * Input paths a cached action's sources take a value from (names, derivations, patterns, files):
 * the values the replay enters from the new input there. A word typed into a search counts: what
 * it picks is the new input's, and the final check looks at the record.
 */
export function sourcePaths(sources: readonly ValueBinding[] | undefined): KeyPath[] {
  return (sources ?? []).flatMap(({ source }) => {
    if (source.kind === 'input') return source.paths;
    // An input file's value is its `$file` (the name the model sees): what the input's digests hold.
    if (source.kind === 'file') return source.paths.map((p) => [...p, '$file']);
    if (source.kind === 'derived') return [source.path];
    if (source.kind === 'pattern') return source.parts.flatMap((p) => ('path' in p ? [p.path] : []));
    return [];
  });
}

/**
 * The pieces of each input value the cached actions enter one by one that this run does not:
 * the new value has more of them than the cached run entered.
 */
export function piecesNotEntered(actions: ReadonlyArray<{ sources?: readonly ValueBinding[] }>, payload: unknown): MissingPiece[] {
  const byPath = new Map<string, { path: KeyPath; unit: MissingPiece['unit']; indexes: Set<number> }>();
  for (const action of actions) {
    for (const { source } of action.sources ?? []) {
      if (source.kind !== 'derived' || source.derivation.how !== 'piece') continue;
      const key = `${pathId(source.path)}/${source.derivation.unit}`;
      const seen = byPath.get(key) ?? { path: source.path, unit: source.derivation.unit, indexes: new Set<number>() };
      seen.indexes.add(source.derivation.index);
      byPath.set(key, seen);
    }
  }
  const out: MissingPiece[] = [];
  for (const { path, unit, indexes } of byPath.values()) {
    const value = valueAt(payload, path);
    const count = typeof value === 'string' ? pieceCount(value, unit) : 0;
    for (let index = 0; index < count; index++) if (!indexes.has(index)) out.push({ path, unit, index });
  }
  return out;
}

function isEntered(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function uniquePaths(paths: readonly KeyPath[]): KeyPath[] {
  return [...new Map(paths.map((p) => [pathId(p), p])).values()];
}
