/**
 * The page structure script (an entry: scripts/build-page-scripts.ts bundles it into the string
 * page-structure.ts installs in an isolated world of each document, so the page's own scripts
 * can neither see nor change it). What the page's structure looks like to the agent, and the
 * elements it acts on by reference.
 *
 * Each element it reports gets a reference (`ref_N`, refs.ts); the numbers come from the worker
 * (`next`), which keeps one sequence per tab. Calls that hand out references take `next` and
 * answer the next free number with their result.
 */
import { annotate, axDirty, watchForNames } from './ax-store.js';
import { contentDigest } from './digest.js';
import { deepActive, inputType, isInput } from './dom.js';
import { focus, focused, hideText, setValue } from './fields.js';
import { findCandidates, linesFor } from './find.js';
import { pageText } from './page-text.js';
import { frameBox, frameHosts, readPage } from './read-page.js';
import { lookup, refOf } from './refs.js';
import { STRUCTURE_KEY } from './keys.js';
import type { Refusal } from './shapes.js';
import { axWanted, name, role } from './semantics.js';
import { hitAt } from './hit.js';
import { elementAt, identity, locate, pointOf } from './targets.js';
import { calendar, popupOptions, widgetOf } from './widgets.js';

const STALE: Refusal = { ok: false, error: 'stale' };

const api = {
  readPage,
  findCandidates,
  axDirty,
  annotate,
  axWanted,
  linesFor,
  frameHosts,
  frameBox: (ref: string) => {
    const el = lookup(ref);
    return el ? frameBox(el) : STALE;
  },
  /** Whether a point of this document's viewport reaches the frame (not a cover over it). */
  frameHit: (ref: string, x: number, y: number) => {
    const el = lookup(ref);
    return !!el && hitAt(x, y) === el;
  },
  pageText,
  contentDigest,
  lookup,
  refOf: (el: Element, next: number) => {
    const state = { next };
    const ref = refOf(el, state);
    return { ref, next: state.next };
  },
  point: (ref: string) => {
    const el = lookup(ref);
    return el ? pointOf(el) : STALE;
  },
  identify: (ref: string) => {
    const el = lookup(ref);
    return el ? identity(el) : null;
  },
  identifyAt: (x: number, y: number) => {
    const el = elementAt(x, y);
    return el ? identity(el) : null;
  },
  locate,
  /** Sets a field's value; `at` is when, by the page's clock, in the same task (a timer that runs later sees the value). */
  setValue: (ref: string, value: string | number | boolean) => {
    const el = lookup(ref);
    if (!el) return STALE;
    const set = setValue(el, value);
    return set.ok ? { ...set, at: Date.now() } : set;
  },
  scrollTo: (ref: string): { ok: true } | Refusal => {
    const el = lookup(ref);
    if (!el) return STALE;
    el.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' });
    return { ok: true };
  },
  focused,
  focus: (ref: string) => {
    const el = lookup(ref);
    return el ? focus(el) : null;
  },
  hideText: (ref: string | null, shownAs: string) => hideText(ref === null ? deepActive() : lookup(ref), String(shownAs)),
  /** A short-lived attribute that lets the page's own world find the element (file uploads). */
  mark: (ref: string, attribute: string, value: string | null) => {
    const el = lookup(ref);
    if (!el) return false;
    if (value === null) el.removeAttribute(attribute);
    else el.setAttribute(attribute, value);
    return true;
  },
  widget: (ref: string) => {
    const el = lookup(ref);
    return el ? widgetOf(el) : null;
  },
  popupOptions: (ref: string, next: number) => {
    const el = lookup(ref);
    const state = { next };
    return el ? { options: popupOptions(el, state), next: state.next } : null;
  },
  calendar: (next: number) => {
    const state = { next };
    const view = calendar(state);
    return { view, next: state.next };
  },
  describe: (ref: string) => {
    const el = lookup(ref);
    if (!el) return null;
    const r = role(el);
    return { role: r || el.localName, name: name(el, r), tag: el.localName, type: isInput(el) ? inputType(el) : undefined };
  },
};

/** What the worker may call, with its arguments and answers (page-structure.ts types its calls by it). */
export type StructureApi = typeof api;

if (!Object.prototype.hasOwnProperty.call(globalThis, STRUCTURE_KEY)) {
  watchForNames();
  Object.defineProperty(globalThis, STRUCTURE_KEY, { enumerable: false, value: api });
}
