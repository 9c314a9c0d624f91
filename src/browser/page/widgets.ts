/**
 * The widgets form_input fills the way a person does (toolset/widget-input.ts drives them with
 * the mouse and keyboard): what kind of widget an element is and what it holds now, the options
 * its pop-up shows, and the days of a pop-up calendar. See docs/action-spaces.md#form_input-on-widgets.
 */
import { children, isContainer, isElement, isInput, isTextArea, parentOf } from './dom.js';
import { refOf, type RefState } from './refs.js';
import type { CalendarView, PopupOption, WidgetState } from './shapes.js';
import { byIds, isDisabled, name, role, textOf, visibility } from './semantics.js';
import { squash } from './text.js';
import { secretShown } from './secret-fields.js';

/** The native select a widget draws over (select2, tom-select, …): hidden, just before the widget or one of its parents. */
function nativeBehind(el: Element): HTMLSelectElement | null {
  let node: Element | null = el;
  for (let up = 0; node && up < 4; up++) {
    for (let prev = node.previousElementSibling; prev; prev = prev.previousElementSibling) {
      if (prev.localName === 'select' && visibility(prev) !== 'shown') return prev as HTMLSelectElement;
      if (visibility(prev) === 'shown') break;
    }
    node = parentOf(node);
  }
  return null;
}

function checkedOf(el: Element): boolean {
  if (el.getAttribute('aria-checked') != null) return el.getAttribute('aria-checked') === 'true';
  if (el.getAttribute('aria-pressed') != null) return el.getAttribute('aria-pressed') === 'true';
  return !!(el as Partial<HTMLInputElement>).checked;
}

/** The texts a choice widget holds now: its hidden select's chosen options, else what it shows. */
function chosenOf(el: Element): string[] {
  const native = nativeBehind(el);
  if (native) return Array.from(native.selectedOptions).map((o) => squash(o.label || o.textContent)).filter(Boolean);
  if ((isInput(el) || isTextArea(el)) && el.value) return [squash(secretShown(el) ?? el.value)];
  // The widget's box: its parent holds the chosen items beside the typing field (tom-select's items).
  const box = el.parentElement || el;
  const shown = textOf(box);
  return shown ? [shown] : [];
}

/**
 * What form_input can do with an element the plain setter refuses: 'choice' (a combobox or
 * listbox drawn by a script), 'toggle' (a switch or checkbox drawn as a button), 'date' (a
 * read-only field that opens a calendar), 'cell' (a grid's cell edited in place) or 'none'.
 */
export function widgetOf(el: Element): WidgetState {
  const r = role(el) || el.localName;
  if ((r === 'switch' || r === 'checkbox' || r === 'menuitemcheckbox' || (r === 'button' && el.getAttribute('aria-pressed') != null)) && !isInput(el)) {
    return { kind: 'toggle', checked: checkedOf(el) };
  }
  if (r === 'combobox' || r === 'listbox' || (r === 'clickable' && el.getAttribute('aria-haspopup'))) {
    if (el.localName === 'select' || (isInput(el) && el.hasAttribute('list'))) return { kind: 'none' };
    const behind = nativeBehind(el);
    const multiple = (behind && behind.multiple) || el.getAttribute('aria-multiselectable') === 'true'
      || byIds(el, 'aria-controls').some((l) => l.getAttribute('aria-multiselectable') === 'true');
    return { kind: 'choice', multiple: !!multiple, chosen: chosenOf(el), expanded: el.getAttribute('aria-expanded') === 'true' };
  }
  if (isInput(el) && el.readOnly && !isDisabled(el)) return { kind: 'date', value: secretShown(el) ?? el.value };
  // A data grid's cell, edited in place: a click (or Enter) opens its editor.
  if ((r === 'gridcell' || (r === 'cell' && el.closest('[role=grid], [role=treegrid]'))) && !el.querySelector('input, select, textarea, [contenteditable]')) return { kind: 'cell', text: textOf(el) };
  return { kind: 'none', role: r };
}

/** Visible elements under root (shadow roots and slots followed) that pass keep. */
function shownWhere(root: Node, keep: (el: Element) => boolean): Element[] {
  const out: Element[] = [];
  const visit = (n: Node) => {
    if (!isContainer(n)) return;
    if (isElement(n)) {
      const vis = visibility(n);
      if (vis === 'gone') return;
      if (vis === 'shown' && keep(n)) out.push(n);
    }
    for (const c of children(n)) visit(c);
  };
  visit(root);
  return out;
}

/** The options a choice widget's pop-up shows now: in the list it controls, else anywhere on the page. */
export function popupOptions(el: Element, state: RefState): PopupOption[] {
  const isOption = (n: Element) => role(n) === 'option' && n.localName !== 'option';
  const lists = byIds(el, 'aria-controls').concat(byIds(el, 'aria-owns'));
  let found: Element[] = [];
  for (const list of lists) found = found.concat(shownWhere(list, isOption));
  if (found.length === 0) found = shownWhere(document.documentElement, isOption);
  return found.slice(0, 200).map((o) => ({ ref: refOf(o, state), text: textOf(o) || name(o, 'option'), selected: o.getAttribute('aria-selected') === 'true' }));
}

/** A day of a pop-up calendar: the date its label, title or data attribute names, as YYYY-MM-DD. */
function dayOf(n: Element): string | null {
  const pad = (v: number) => String(v).padStart(2, '0');
  for (const text of [n.getAttribute('data-date'), n.getAttribute('aria-label'), n.getAttribute('title'), n.getAttribute('datetime')]) {
    if (!text || !/\d/.test(text) || !/(19|20)\d\d/.test(text)) continue;
    const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim());
    if (iso) return iso[1] + '-' + iso[2] + '-' + iso[3];
    const at = new Date(text);
    if (!isNaN(at.getTime())) return at.getFullYear() + '-' + pad(at.getMonth() + 1) + '-' + pad(at.getDate());
  }
  return null;
}

/** The words of an element's class, label and title, for spotting a calendar's previous and next controls. */
function words(n: Element): string {
  const cls = (n as { className?: unknown }).className;
  const classText = cls && typeof cls === 'object' && 'baseVal' in cls ? String(cls.baseVal) : String(cls);
  return (classText + ' ' + (n.getAttribute('aria-label') || '') + ' ' + (n.getAttribute('title') || '')).toLowerCase();
}

/** The calendar the page shows: its days, and the controls that move to the previous and next month. */
export function calendar(state: RefState): CalendarView {
  const days = shownWhere(document.documentElement, (n) => n.childElementCount <= 1 && dayOf(n) !== null && !n.matches('input, select, textarea, time'));
  const clickable = (n: Element) => role(n) === 'button' || role(n) === 'clickable' || getComputedStyle(n).cursor === 'pointer';
  const near = days[0] ? (days[0].closest('[role=dialog], [class*=calendar], [class*=picker], [class*=datepicker]') || document.documentElement) : document.documentElement;
  const prev = shownWhere(near, (n) => clickable(n) && /prev/.test(words(n)));
  const next = shownWhere(near, (n) => clickable(n) && /next/.test(words(n)));
  const last = (list: Element[]) => list[list.length - 1];
  const prevEl = last(prev);
  const nextEl = last(next);
  return {
    days: days.slice(0, 120).map((d) => ({ ref: refOf(d, state), date: dayOf(d) ?? '' })),
    prev: prevEl ? refOf(prevEl, state) : null,
    next: nextEl ? refOf(nextEl, state) : null,
  };
}
