/**
 * The state an action leaves on the element it acted on, as a read of the page shows it
 * (docs/run-cache.md#effects): a disclosure's `expanded`, a checkbox's, radio's or switch's
 * `checked`, a tab's or option's `selected`, a toggle button's `pressed`. Read just before a
 * click and again once the page has settled after it; what changed is the action's effect, and
 * the run cache keeps it with the action. An element whose state a read does not show, or a
 * click that changed none of it, has no effect to keep.
 */
/**
 * What reading a state needs of a tab: one line of its page read, by reference. Declared here,
 * not taken from the browser's port, so this file stays on the domain floor (a BrowserTab has it).
 */
export interface ReadsElementLine {
  readPage(options: { ref: string; filter: 'all'; depth: number; maxChars: number }, signal: AbortSignal): Promise<{ ok: true; value: { lines: readonly string[] } } | { ok: false }>;
}

/** An element's states, as far as a read of it shows them. */
export interface ElementState {
  expanded?: boolean;
  checked?: boolean;
  selected?: boolean;
  pressed?: boolean;
}

/** What an action did to its element: the states before and after it, those it changed only. */
export interface ActionEffect {
  before: ElementState;
  after: ElementState;
}

const KEYS = ['expanded', 'checked', 'selected', 'pressed'] as const;
/** Roles whose `selected` shows only when it holds: on those, its absence is "not selected". */
const SELECTABLE = new Set(['tab', 'option', 'treeitem', 'gridcell', 'row']);

/** The states of one read_page line (`button "Tags" [ref_4] collapsed`): quoted names and values set aside. */
export function stateOfLine(line: string): ElementState | undefined {
  const m = /^\s*(\S+)\s.*?\[ref_\d+\](.*)$/.exec(line) ?? /^\s*(\S+)\s*\[ref_\d+\](.*)$/.exec(line);
  if (!m) return undefined;
  const role = m[1]!;
  const words = new Set(m[2]!.replace(/"(?:[^"\\]|\\.)*"/g, '""').split(/\s+/).filter(Boolean));
  const state: ElementState = {};
  if (words.has('checked') || words.has('unchecked')) state.checked = words.has('checked');
  if (words.has('expanded') || words.has('collapsed')) state.expanded = words.has('expanded');
  if (words.has('pressed') || words.has('not-pressed')) state.pressed = words.has('pressed');
  if (words.has('selected') || SELECTABLE.has(role)) state.selected = words.has('selected');
  return state;
}

/** The states of the referenced element now; undefined when it cannot be read (gone, no tab). */
export async function readState(tab: ReadsElementLine, ref: string, signal: AbortSignal): Promise<ElementState | undefined> {
  const read = await tab.readPage({ ref, filter: 'all', depth: 1, maxChars: 2_000 }, signal).catch((error: unknown) => {
    if (signal.aborted) throw error;
    return undefined;
  });
  const first = read?.ok ? read.value.lines[0] : undefined;
  return first === undefined ? undefined : stateOfLine(first);
}

/** The states a click changed, before and after; undefined when it changed none that a read shows. */
export function effectOf(before: ElementState | undefined, after: ElementState | undefined): ActionEffect | undefined {
  if (!before || !after) return undefined;
  const effect: ActionEffect = { before: {}, after: {} };
  for (const key of KEYS) {
    if (before[key] === undefined || after[key] === undefined || before[key] === after[key]) continue;
    effect.before[key] = before[key];
    effect.after[key] = after[key];
  }
  return Object.keys(effect.after).length > 0 ? effect : undefined;
}

/** Whether an element's states hold all of `want`'s. */
export function holdsState(now: ElementState, want: ElementState): boolean {
  return KEYS.every((key) => want[key] === undefined || now[key] === want[key]);
}

/** `expanded`, `unchecked`, `selected`, …: a state as a read shows it, for reasons and logs. */
export function describeState(state: ElementState): string {
  const words: string[] = [];
  if (state.expanded !== undefined) words.push(state.expanded ? 'expanded' : 'collapsed');
  if (state.checked !== undefined) words.push(state.checked ? 'checked' : 'unchecked');
  if (state.selected !== undefined) words.push(state.selected ? 'selected' : 'not selected');
  if (state.pressed !== undefined) words.push(state.pressed ? 'pressed' : 'not pressed');
  return words.join(', ') || 'no state';
}
