/**
 * form_input on the widgets business software is built with, where no value can simply be set:
 * a combobox or listbox drawn by a script (select2, tom-select, a design system's select), a
 * switch or checkbox drawn as a button, a read-only date field that opens a calendar. Each is
 * filled the way a person fills it, with the real mouse and keyboard (the page's own handlers
 * run, so the component's state is what changes): open it, type to narrow the list, click the
 * option; click the switch; open the calendar, move to the month, click the day. Then the
 * widget is read back, and a value it does not hold is an error, not a success.
 * See docs/action-spaces.md#form_input-on-widgets.
 */
import { COMPUTER_TOOLSET } from '../domain/action-spaces.js';
import type { BrowserSession, BrowserTab, PopupOption, WidgetState } from '../browser/types.js';
import { executeComputerAction } from './computer-actions.js';
import type { DisplayGeometry } from './computer-types.js';

/** What the driver lends: real clicks at an element and keystrokes, each followed by settle. */
export interface WidgetHands {
  tab: BrowserTab;
  /** The run's: reads of the tab stop with it. */
  signal: AbortSignal;
  click(ref: string): Promise<void>;
  type(text: string): Promise<void>;
  key(name: string): Promise<void>;
}

/** Hands on the real mouse and keyboard of the session (the computer table's actions), each followed by `settle`. */
export function createWidgetHands(
  tab: BrowserTab,
  deps: { session: BrowserSession; geometry: DisplayGeometry; vault: Parameters<typeof executeComputerAction>[1]['vault']; signal: AbortSignal; settle: () => Promise<void> },
): WidgetHands {
  const run = async (input: Record<string, unknown>) => {
    const outcome = await executeComputerAction(input, { session: deps.session, geometry: deps.geometry, toolVersion: COMPUTER_TOOLSET, vault: deps.vault, signal: deps.signal });
    if (!outcome.ok) throw new Error(outcome.error);
    await deps.settle();
  };
  return {
    tab,
    signal: deps.signal,
    click: async (ref) => {
      const at = await tab.pointOf(ref, deps.signal);
      if (!at.ok) throw new Error(at.error);
      const shown = deps.geometry.toDisplay(at.value.x, at.value.y);
      await run({ action: 'left_click', coordinate: [shown.x, shown.y] });
    },
    type: (text) => run({ action: 'type', text }),
    key: (name) => run({ action: 'key', text: name }),
  };
}

export type WidgetOutcome = { ok: true; note: string } | { ok: false; error: string };

/** Month steps a calendar is moved at most (three years either way). */
const MAX_MONTH_STEPS = 36;

export async function fillWidget(hands: WidgetHands, ref: string, state: WidgetState, value: string | number | boolean): Promise<WidgetOutcome> {
  switch (state.kind) {
    case 'toggle':
      return fillToggle(hands, ref, state.checked, value);
    case 'choice':
      return fillChoice(hands, ref, state, String(value));
    case 'date':
      return fillDate(hands, ref, state.value, String(value));
    case 'cell':
      return fillCell(hands, ref, String(value));
    case 'none':
      return { ok: false, error: `${ref} is not a form field` };
  }
}

function asBoolean(value: string | number | boolean): boolean | undefined {
  const text = String(value).toLowerCase();
  if (['true', '1', 'on', 'checked', 'yes'].includes(text)) return true;
  if (['false', '0', 'off', 'unchecked', 'no'].includes(text)) return false;
  return undefined;
}

async function fillToggle(hands: WidgetHands, ref: string, checked: boolean, value: string | number | boolean): Promise<WidgetOutcome> {
  const want = asBoolean(value);
  if (want === undefined) return { ok: false, error: `${ref} is a switch or checkbox: give true or false` };
  if (checked !== want) {
    await hands.click(ref);
    const after = await hands.tab.widget(ref, hands.signal);
    if (!after.ok) return { ok: false, error: after.error };
    if (after.value.kind !== 'toggle' || after.value.checked !== want) return { ok: false, error: `the page did not let ${ref} change its state (clicked once; it is still ${checked ? 'on' : 'off'})` };
  }
  return { ok: true, note: `${ref} is ${want ? 'on' : 'off'}.` };
}

const norm = (text: string) => text.replace(/\s+/g, ' ').trim().toLowerCase();

/** The option a text means: the one of that text, else the one it starts, else the one containing it; several partial matches mean none. */
function pick(options: readonly PopupOption[], item: string): { option?: PopupOption; ambiguous?: PopupOption[] } {
  const want = norm(item);
  const exact = options.find((o) => norm(o.text) === want);
  if (exact) return { option: exact };
  for (const test of [(t: string) => t.startsWith(want), (t: string) => t.includes(want)]) {
    const found = options.filter((o) => test(norm(o.text)));
    if (found.length === 1) return { option: found[0]! };
    if (found.length > 1) return { ambiguous: found };
  }
  return {};
}

const listed = (options: readonly PopupOption[]) =>
  options
    .slice(0, 15)
    .map((o) => JSON.stringify(o.text))
    .join(', ') + (options.length > 15 ? `, … (${options.length} in all)` : '');

async function fillChoice(hands: WidgetHands, ref: string, state: Extract<WidgetState, { kind: 'choice' }>, value: string): Promise<WidgetOutcome> {
  // Several choices of a multi-select are given as one text, separated by commas.
  const items = state.multiple ? value.split(',').map((v) => v.trim()).filter(Boolean) : [value.trim()];
  if (items.length === 0) return { ok: false, error: `give the text of the option to choose in ${ref}` };
  const options = async () => {
    const shown = await hands.tab.popupOptions(ref, hands.signal);
    return shown.ok ? shown.value : [];
  };
  for (const item of items) {
    let shown = await options();
    // What the list offered before typing narrowed it: named in a refusal when typing leaves nothing.
    let offered = shown;
    if (!pick(shown, item).option) {
      if (shown.length === 0) {
        await hands.click(ref);
        shown = await options();
        offered = shown;
      }
      // A widget with a typing field narrows its list to what is typed (and loads remote options).
      const focus = await hands.tab.focused(hands.signal);
      if (!pick(shown, item).option && focus?.editable) {
        await hands.type(item);
        shown = await options();
      }
    }
    const { option, ambiguous } = pick(shown, item);
    if (!option) {
      await hands.key('Escape');
      if (ambiguous) return { ok: false, error: `${ref}: several options match "${item}": ${listed(ambiguous)}; give the whole text of one` };
      const known = shown.length > 0 ? shown : offered;
      return {
        ok: false,
        error:
          known.length > 0
            ? `${ref} has no option "${item}"; the options it offers include: ${listed(known)}`
            : `${ref} showed no options when opened: click it and read the page to see how it offers its choices`,
      };
    }
    // aria-selected marks the highlighted option in many lists, not a chosen one: what the widget holds says.
    if (!(state.multiple && (await chosenNow(hands, ref)).some((c) => norm(c) === norm(option.text)))) await hands.click(option.ref);
  }
  // A multi-select's list may stay open after a choice.
  if (state.multiple && (await options()).length > 0) await hands.key('Escape');
  const chosen = await chosenNow(hands, ref);
  const missing = items.filter((item) => !chosen.some((c) => norm(c).includes(norm(item))));
  if (missing.length > 0) return { ok: false, error: `${ref} does not hold ${missing.map((m) => JSON.stringify(m)).join(', ')} after the option was clicked; it shows ${JSON.stringify(chosen.join(', '))}` };
  return { ok: true, note: `Selected ${chosen.map((c) => JSON.stringify(c)).join(', ')}.` };
}

/** A grid cell edited in place: clicked, its editor (which takes focus) filled by keyboard and committed with Enter. */
async function fillCell(hands: WidgetHands, ref: string, value: string): Promise<WidgetOutcome> {
  await hands.click(ref);
  if (!(await hands.tab.focused(hands.signal))?.editable) return { ok: false, error: `${ref} is a grid cell that opened no editor when clicked: it is not editable here` };
  await hands.key('ctrl+a');
  await hands.type(value);
  await hands.key('Return');
  const after = await hands.tab.widget(ref, hands.signal);
  const shows = after.ok && after.value.kind === 'cell' ? after.value.text : '';
  if (norm(shows) !== norm(value)) return { ok: false, error: `${ref} shows ${JSON.stringify(shows)} after ${JSON.stringify(value)} was entered in its editor` };
  return { ok: true, note: `${ref} shows ${JSON.stringify(shows)}.` };
}

async function chosenNow(hands: WidgetHands, ref: string): Promise<string[]> {
  const now = await hands.tab.widget(ref, hands.signal);
  return now.ok && now.value.kind === 'choice' ? now.value.chosen : [];
}

async function fillDate(hands: WidgetHands, ref: string, before: string, value: string): Promise<WidgetOutcome> {
  const want = value.trim();
  if (!/^\d{4}-\d{2}-\d{2}$/.test(want)) return { ok: false, error: `${ref} is a read-only date field that opens a calendar: give the date as YYYY-MM-DD` };
  // A calendar the page already showed is not this field's pop-up: the click must open one.
  const shownBefore = (await hands.tab.calendar(hands.signal)).days.map((d) => d.date).join();
  await hands.click(ref);
  let view = await hands.tab.calendar(hands.signal);
  if (view.days.length === 0 || view.days.map((d) => d.date).join() === shownBefore) {
    return { ok: false, error: `${ref} is read-only and opened no calendar when clicked: it takes no typed value (if a control beside it sets it, use that)` };
  }
  for (let step = 0; ; step++) {
    const day = view.days.find((d) => d.date === want);
    if (day) {
      await hands.click(day.ref);
      break;
    }
    const dates = view.days.map((d) => d.date).sort();
    const control = want < dates[0]! ? view.prev : view.next;
    if (!control || step >= MAX_MONTH_STEPS) {
      await hands.key('Escape');
      return { ok: false, error: `the calendar of ${ref} did not reach ${want} (it shows ${dates[0]} to ${dates[dates.length - 1]}): read the page and use its month controls` };
    }
    await hands.click(control);
    view = await hands.tab.calendar(hands.signal);
  }
  const after = await hands.tab.widget(ref, hands.signal);
  const shows = after.ok && after.value.kind === 'date' ? after.value.value : '';
  if (!shows || (shows === before && before !== want && !sameDay(shows, want))) return { ok: false, error: `${ref} does not show the date after ${want} was clicked in its calendar (it shows ${JSON.stringify(shows)})` };
  return { ok: true, note: shows === want ? `${ref} is ${want}.` : `${ref} shows ${JSON.stringify(shows)}.` };
}

function sameDay(shown: string, iso: string): boolean {
  const at = new Date(shown);
  if (Number.isNaN(at.getTime())) return false;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}` === iso;
}
