/**
 * The replay's read-back (docs/run-cache.md#replay): after a replayed action that sets a value,
 * the field is read again through the browser port and must hold what was entered. A page that
 * rewrites, clamps or refuses the value stops the replay there, and the model takes over.
 */
import type { BrowserTab, ElementIdentity } from '../browser/types.js';

/** Longest value a read of the page shows whole (longer ones end in "…": their start is compared). */
const SHOWN_MAX = 199;
const SECRET = /\{\{[^}]+\}\}/;

/** `held`: what the element holds, as a read shows it (absent when it could not be read); `checked`: a checked state's expected value, when that is what was read. */
export type HoldCheck = { ok: true; held?: string; checked?: boolean } | { ok: false; reason: string; held?: string };

/**
 * Whether the element of `ref` holds `expected`: a boolean as its checked state; text and numbers
 * as its value (`type` appends, so its text need only be in the value; a select shows its option's
 * text, compared without case). A secret's placeholder is never compared: the field must not be empty.
 */
export async function holdsValue(tab: BrowserTab, ref: string, expected: unknown, how: 'set' | 'typed', what: ElementIdentity | undefined, signal: AbortSignal): Promise<HoldCheck> {
  let read = await tab.readPage({ ref, filter: 'all', depth: 1, maxChars: 2_000 }, signal);
  // A form that redraws itself on a change (a tracker or category select) replaces the element the
  // replay set: read the element of the same identity that stands there now.
  if (!read.ok && what) {
    const again = await tab.locate(what, signal);
    if (again.ok) read = await tab.readPage({ ref: again.value.ref, filter: 'all', depth: 1, maxChars: 2_000 }, signal);
  }
  const name = what ? `${what.role}${what.name ? ` "${what.name}"` : ''}` : 'the field';
  if (!read.ok || read.value.lines.length === 0) return { ok: false, reason: `${name} could not be read back after the replay set it${read.ok ? '' : `: ${read.error}`}` };
  const line = read.value.lines[0]!.trim();
  const differs: HoldCheck = { ok: false, reason: `${name} does not hold the value the replay entered (the page changed or refused it)` };
  if (typeof expected === 'boolean') {
    const state = /\]\s.*?\b(checked|unchecked)\b/.exec(line)?.[1];
    if (state === undefined) return { ok: false, reason: `${name} shows no checked state to read back` };
    return (state === 'checked') === expected ? { ok: true, held: state, checked: expected } : { ...differs, held: state };
  }
  const raw = valueIn(line);
  const held = squash(raw);
  const want = squash(String(expected));
  const yes = { ok: true as const, held };
  const no = { ...differs, held };
  if (SECRET.test(want)) return held !== '' ? { ok: true, held: want } : differs;
  if (want === '') return held === '' ? yes : no;
  const select = what?.tag === 'select' || /^(combobox|listbox)\b/.test(line);
  const same = (a: string, b: string) => (select ? a.toLowerCase() === b.toLowerCase() : a === b);
  const shown = raw.endsWith('\u2026') && raw.length >= SHOWN_MAX ? held.slice(0, -1) : undefined;
  if (how === 'typed') return held.includes(want) || (shown !== undefined && want.startsWith(shown.slice(-Math.min(shown.length, want.length)))) ? yes : no;
  if (same(held, want) || (shown !== undefined && want.startsWith(shown))) return yes;
  return no;
}

/** The `value="…"` of a read_page line, unescaped as the read quotes it (`\\`, `\"`, `\n`); empty when it shows none. */
function valueIn(line: string): string {
  const m = /\bvalue="((?:[^"\\]|\\.)*)"/.exec(line);
  return m ? m[1]!.replace(/\\(["\\n])/g, (_all, c: string) => (c === 'n' ? '\n' : c)) : '';
}

/** Whitespace as one space, trimmed; invisible characters (an editor's caret holder) left out: alone, they are an empty value. */
function squash(s: string): string {
  return s.replace(/[\u200b-\u200d\u2060\ufeff]/g, '').replace(/[\s\u00a0]+/g, ' ').trim();
}
