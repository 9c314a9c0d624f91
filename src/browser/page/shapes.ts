/**
 * The shapes the page scripts answer with, declared once for both sides: the page code
 * returns them, the Node side (browser/types.ts re-exports them) reads them. Plain data only:
 * every answer crosses the boundary as JSON.
 */

/** A point of the top window's viewport, in CSS pixels. */
export interface Point {
  x: number;
  y: number;
}

/**
 * What identifies an element across page loads (the run cache's precondition): its role and
 * accessible name first; attributes and its position in the document break ties.
 */
export interface ElementIdentity {
  role: string;
  name: string;
  tag: string;
  /** `type` of an input. */
  type?: string;
  id?: string;
  /** The `name` attribute. */
  nameAttr?: string;
  testId?: string;
  href?: string;
  /** A structural path from the body (`form>div:nth-of-type(2)>button`). */
  path?: string;
}

/** One element as find() ranks it. */
export interface FoundElement {
  i: number;
  role: string;
  name: string;
  /** Words around it: placeholder, title, name and id attributes, its form or section heading. */
  context: string;
  inView: boolean;
  /** It can never be brought into view (parked off the page, clipped away): ranked after every element that can. */
  unreachable?: boolean;
  /** The browser's description of it (`aria-describedby`, a title beside its name). */
  description?: string;
  /** The text just before a field that has no label of its own. */
  label?: string;
  /** The heading it comes under, and the region it sits in (role and name, e.g. `form "Order"`). */
  heading?: string;
  region?: string;
  regionRole?: string;
  regionName?: string;
  /** The column and row headers of the table cell it is in. */
  column?: string;
  row?: string;
  href?: string;
}

/** What form_input may do with an element the plain setter refuses. */
export type WidgetState =
  | { kind: 'choice'; multiple: boolean; chosen: string[]; expanded: boolean }
  | { kind: 'toggle'; checked: boolean }
  | { kind: 'date'; value: string }
  | { kind: 'cell'; text: string }
  | { kind: 'none'; role?: string };

export interface PopupOption {
  ref: string;
  text: string;
  selected: boolean;
}

export interface CalendarView {
  /** Dates as YYYY-MM-DD. */
  days: Array<{ ref: string; date: string }>;
  prev: string | null;
  next: string | null;
}

/** One element's names from the browser's accessibility tree (ax-names.ts hands them to the page). */
export interface AxInfo {
  role: string;
  name: string;
  description: string;
}

/**
 * Why the page refused an action on an element: page-structure.ts turns the code into the
 * sentence the agent reads (with the details each code carries).
 */
export type Refusal =
  | { ok: false; error: 'stale' | 'hidden' | 'offscreen' | 'disabled' | 'readonly' | 'option-disabled' | 'not-boolean' | 'radio-clear' | 'refused' | 'file' }
  | { ok: false; error: 'covered'; by: string }
  | { ok: false; error: 'no-option'; options: string[] }
  | { ok: false; error: 'format'; type: string }
  | { ok: false; error: 'not-a-field'; role: string };

/** The tree read_page asks a document for: its lines, what was left out, and where frames of other sites go. */
export interface TreeRead {
  ok: true;
  lines: string[];
  omitted: number;
  deeper: number;
  frames: Array<{ ref: string; at: number; depth: number }>;
  next: number;
}

export interface ReadOptions {
  next: number;
  filter?: 'interactive' | 'all' | undefined;
  wholePage?: boolean | undefined;
  depth?: number | undefined;
  ref?: string | undefined;
  maxChars: number;
  /** A select's options listed below it, at most (40 when not said). */
  optionsMax?: number | undefined;
}
