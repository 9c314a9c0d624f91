/**
 * find's side in the page: every element the worker may rank, with what it ranks by (role,
 * name, and where the element is: its description, the text before an unlabelled field, its
 * table headers, the heading it comes under, the region it sits in), and the result lines of the
 * chosen ones. The ranking itself is the worker's (toolset/find-rank.ts).
 */
import { axDescription } from './ax-store.js';
import { deepActive, inputType, inViewport, isInput, parentOf } from './dom.js';
import { line } from './element-line.js';
import type { RefState } from './refs.js';
import type { FoundElement } from './shapes.js';
import { editableRegion, INTERACTIVE, name, role, shownText, textOf, TEXTUAL, visibility } from './semantics.js';
import { cut, NAME_MAX, quote, squash } from './text.js';
import { candidates, type Candidate } from './candidates.js';

/** Roles of fields that a text just before them may name. */
const LABELLED_BY_TEXT = ['textbox', 'searchbox', 'combobox', 'listbox', 'spinbutton', 'checkbox', 'radio', 'switch', 'slider'];

/** Words that describe an element beyond its name: placeholder, value, attributes, the heading or legend it sits under. */
function context(el: Element): string {
  const words = [el.getAttribute('placeholder'), el.getAttribute('title'), el.getAttribute('name'), el.id,
    el.getAttribute('data-testid'), isInput(el) ? inputType(el) : el.localName, el.localName === 'button' ? (el as HTMLButtonElement).type : ''];
  const group = el.closest('fieldset, form, section, [role=dialog], dialog, nav, header, footer');
  if (group) {
    const legend = group.querySelector('legend, h1, h2, h3, h4, [role=heading]');
    if (legend) words.push(textOf(legend));
    words.push(group.getAttribute('aria-label'));
  }
  return squash(words.filter(Boolean).join(' '));
}

/** The headers of the table cell an element is in: its column's and its row's (when not the element's own cell). */
function headersOf(el: Element): { column?: string; row?: string } {
  const cell = el.closest('td, th, [role=cell], [role=gridcell]');
  if (!cell) return {};
  const row = cell.parentElement;
  const table = cell.closest('table, [role=table], [role=grid], [role=treegrid]');
  if (!row || !table) return {};
  const cells = Array.from(row.children);
  const index = cells.indexOf(cell);
  const headRow = table.querySelector('thead tr, tr:has(> th), [role=row]:has(> [role=columnheader])');
  const head = headRow && headRow !== row ? headRow.children[index] : null;
  const first = cells.find((c) => c.localName === 'th' || c.getAttribute('role') === 'rowheader') || cells[0];
  return {
    column: head ? cut(textOf(head), NAME_MAX) : '',
    row: first && first !== cell ? cut(textOf(first), NAME_MAX) : '',
  };
}

/**
 * What is never a field's label, however close to it: controls (a toolbar's tab links and buttons
 * above an editor, Redmine's "Edit" and "Preview") and the bars that hold them. An element only
 * styled as clickable still may be (a label with a pointer cursor).
 */
const NOT_LABELS = new Set([...INTERACTIVE].filter((r) => r !== 'clickable').concat(['tablist', 'toolbar', 'menu', 'menubar']));
const mayLabel = (el: Element) => !NOT_LABELS.has(role(el) ?? '');

/** A field with no label of its own: the text just before it (in it parent, or its parents' up to three levels), controls' text left out. */
function nearbyLabel(el: Element, r: string): string {
  if (!LABELLED_BY_TEXT.includes(r)) return '';
  const labels = (el as Partial<HTMLInputElement>).labels;
  if (labels && labels.length) return '';
  // A part of a combobox (select2's rendered choice) is named by the combobox, not by the label beside it.
  const box = el.parentElement && el.parentElement.closest('[role=combobox]');
  if (box) return '';
  let node: Element | null = el;
  for (let up = 0; node && up < 4; up++) {
    for (let prev = node.previousElementSibling; prev; prev = prev.previousElementSibling) {
      if (visibility(prev) === 'gone' || !mayLabel(prev)) continue;
      const t = textOf(prev, undefined, mayLabel);
      if (t) return cut(t, 60);
    }
    node = parentOf(node);
  }
  return '';
}

/** Where an element is: every optional part of a found element, '' when it has none. */
type Where = Required<Omit<FoundElement, 'i' | 'role' | 'name' | 'context' | 'inView' | 'unreachable'>>;

/** find()'s view of where an element is, for ranking and for its result line. */
function whereOf(c: Candidate): Where {
  const h = headersOf(c.el);
  const href = c.role === 'link' ? c.el.getAttribute('href') || '' : '';
  return {
    description: squash(axDescription(c.el)),
    label: nearbyLabel(c.el, c.role),
    heading: c.heading !== c.name ? c.heading : '',
    region: c.region ? squash(c.region.role + ' ' + c.region.name) : '',
    regionRole: c.region ? c.region.role : '',
    regionName: c.region ? c.region.name : '',
    column: h.column || '',
    row: h.row || '',
    href: /^javascript:/i.test(href) ? '' : href,
  };
}

/** The words a result line adds so that elements of the same name tell apart. */
function whereLine(w: Where): string {
  const parts: string[] = [];
  if (w.label) parts.push('label ' + quote(w.label));
  if (w.row) parts.push('row ' + quote(w.row));
  if (w.column) parts.push('column ' + quote(w.column));
  if (w.heading) parts.push('under ' + quote(cut(w.heading, 60)));
  if (w.regionRole) parts.push('in ' + w.regionRole + (w.regionName ? ' ' + quote(cut(w.regionName, 60)) : ''));
  return parts.length ? ' (' + parts.join('; ') + ')' : '';
}

let lastFound: Candidate[] = [];

/** find(): every candidate with what the worker ranks it by; the elements stay here for linesFor(). */
export function findCandidates(limit: number): FoundElement[] {
  const list = candidates().slice(0, limit);
  lastFound = list;
  return list.map((c, i) => Object.assign({ i, role: c.role, name: c.name, context: context(c.el), inView: inViewport(c.el) }, unreachable(c.el) ? { unreachable: true } : {}, whereOf(c)));
}

/**
 * Whether an element can never be brought into view: its box lies above or left of the page's
 * start (a fly-out submenu parked at `top: -1000em` until hovered), or a box that clips its
 * content (overflow other than visible) shows none of it. Such an element cannot be clicked.
 */
function unreachable(el: Element): boolean {
  const r = el.getBoundingClientRect();
  if (r.bottom + scrollY <= 0 || r.right + scrollX <= 0) return true;
  for (let up = el.parentElement; up && up !== document.body && up !== document.documentElement; up = up.parentElement) {
    const s = getComputedStyle(up);
    if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
    const b = up.getBoundingClientRect();
    if (r.right <= b.left || r.left >= b.right || r.bottom <= b.top || r.top >= b.bottom) return true;
  }
  return false;
}

/** The result lines of the candidates find() chose (indices of its last list), with fresh references. */
export function linesFor(indices: number[], next: number): { lines: string[]; next: number } {
  const state: RefState = { next, focused: deepActive() };
  const lines: string[] = [];
  for (const i of indices) {
    const c = lastFound[i];
    if (!c || !c.el.isConnected) continue;
    const el = c.el;
    const r = role(el) || el.localName;
    lines.push(line(el, r, state, TEXTUAL.has(r) && !editableRegion(el) ? cut(shownText(el), NAME_MAX * 2) : name(el, r)) + whereLine(whereOf(c)));
  }
  lastFound = [];
  return { lines, next: state.next };
}
