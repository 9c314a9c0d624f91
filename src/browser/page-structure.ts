/**
 * The structure of one document of a tab (its page's, or a frame's of another site:
 * frame-structure.ts joins them), as the agent reads and targets it: read_page, find,
 * get_page_text, and the element behind a reference. The work happens in the page, in an
 * isolated world of the worker's own (the page code of page/structure.ts, built into
 * STRUCTURE_SOURCE by scripts/build-page-scripts.ts), created once per document: the
 * page's scripts share the DOM with it but not its variables, so they cannot redirect a
 * reference to another element.
 *
 * References: one sequence per tab (`ref_1`, `ref_2`, …), never reused in the tab. Each number
 * remembers the document it was given in, so a reference from before a navigation is refused
 * as stale here, before the page is asked; one whose element left the document is refused by
 * the page. Either way the agent is told to read the page again, and nothing else is clicked.
 */
import type { CDPSession } from 'playwright-core';
import { annotateFromAxTree } from './ax-names.js';
import { STRUCTURE_KEY } from './page/keys.js';
import type { Refusal } from './page/shapes.js';
import type { StructureApi } from './page/structure.js';
import { STRUCTURE_SOURCE } from './page-scripts.generated.js';
import type { CalendarView, ElementIdentity, FoundElement, PageRead, PageReadOptions, Point, PopupOption, StructureResult, WidgetState } from './types.js';

/** Name of the isolated world; the page cannot address it. */
const WORLD_NAME = 'execution-worker-structure';
/** find() looks at this many elements at most (a page with more is ranked on its first ones). */
const FIND_POOL = 3_000;

export interface PageStructure {
  readPage(options: PageReadOptions): Promise<StructureResult<PageRead>>;
  /** Ranks the page's elements with `rank` (indices, best first) and returns the lines of the first `limit`. */
  find(rank: (candidates: FoundElement[]) => number[], limit: number): Promise<string[]>;
  pageText(maxChars: number): Promise<{ text: string; total: number; cut: boolean }>;
  /** A short digest of what the tab shows, its frames too (page/digest.ts): equal while the page did not change. */
  contentDigest(): Promise<string>;
  /** A point inside the element, scrolled into view and not covered by another element. */
  pointOf(ref: string): Promise<StructureResult<Point>>;
  setValue(ref: string, value: string | number | boolean): Promise<StructureResult<{ shown?: string; at?: number }>>;
  scrollTo(ref: string): Promise<StructureResult<null>>;
  identify(ref: string): Promise<StructureResult<ElementIdentity>>;
  identifyAt(point: Point): Promise<ElementIdentity | null>;
  /** The element of the current document matching `identity`, with a reference to it. */
  locate(identity: ElementIdentity): Promise<StructureResult<{ ref: string; enabled: boolean; inView: boolean }>>;
  focused(): Promise<{ identity: ElementIdentity; editable: boolean } | null>;
  /** Gives the referenced element the keyboard focus: its identity, or why not. */
  focus(ref: string): Promise<StructureResult<ElementIdentity>>;
  /**
   * Shows the text of a field (the referenced one, or with null the focused one) as discs, so a
   * secret put into it stays out of every picture of the page. False when there is no such field.
   */
  hideText(ref: string | null, shownAs: string): Promise<boolean>;
  /** Sets (or with null removes) an attribute on the referenced element; false when it is gone. */
  mark(ref: string, name: string, value: string | null): Promise<boolean>;
  widget(ref: string): Promise<StructureResult<WidgetState>>;
  popupOptions(ref: string): Promise<StructureResult<PopupOption[]>>;
  calendar(): Promise<CalendarView>;
  /** The short description of a referenced element, for labels and errors. */
  describe(ref: string): Promise<{ role: string; name: string; tag: string; type?: string } | null>;
}

/** Where a frame of another site sits in a read: its reference, the line its content goes before, and its depth. */
export interface FrameSpot {
  ref: string;
  at: number;
  depth: number;
}

/**
 * The references of one tab, shared by the structures of its documents (the top page's and
 * those of frames of other sites): one sequence, and which document gave each number.
 */
export interface RefBook {
  next: number;
  issued: Map<number, { loaderId: string; owner: DocumentStructure }>;
}

/** One document's structure: the top page's, or a frame's of another site (frame-structure.ts joins them). */
export interface DocumentStructure extends PageStructure {
  /** read_page's lines of this document, and where the frames of other sites it holds go. */
  readTree(options: PageReadOptions): Promise<StructureResult<PageRead & { frames: FrameSpot[] }>>;
  /** find's candidates of this document; `lines` then gives the lines of the chosen ones (indices of this list). */
  candidates(): Promise<FoundElement[]>;
  lines(indices: number[]): Promise<string[]>;
  /** References of the frames of other sites this document shows. */
  frameHosts(): Promise<string[]>;
  /** This document's digest (its frames of the same origin included) and how many frames of other sites it holds. */
  documentDigest(): Promise<{ digest: string; otherSites: number }>;
  /** The frame id (CDP) of the document a frame element shows; null when it is gone. */
  frameIdOf(ref: string): Promise<string | null>;
  /** Where the frame's content starts in this document's viewport (the frame brought into view). */
  frameBox(ref: string): Promise<StructureResult<Point>>;
  /** Whether a point of this document's viewport reaches the frame rather than something over it. */
  frameHit(ref: string, point: Point): Promise<boolean>;
}

export const newRefBook = (): RefBook => ({ next: 1, issued: new Map() });

/** Calls that name elements: the browser's names are brought up to date first (ax-names.ts). */
const NAMED = { names: true } as const;

/** Page.getFrameTree's answer. */
export interface FrameTree {
  frame: { id: string; loaderId: string; url: string; unreachableUrl?: string };
  childFrames?: FrameTree[];
}

export function findFrame(tree: FrameTree, id: string): FrameTree['frame'] | undefined {
  if (tree.frame.id === id) return tree.frame;
  for (const child of tree.childFrames ?? []) {
    const found = findFrame(child, id);
    if (found) return found;
  }
  return undefined;
}

interface World {
  loaderId: string;
  contextId: number;
}

/** What a call of the page structure answers (its arguments and answers are JSON). */
type Answer<K extends keyof StructureApi> = Awaited<ReturnType<StructureApi[K]>>;

/** The error the agent reads for a reference it cannot use (the documented wording, and why). */
export function staleRefError(ref: string, why: 'navigated' | 'removed' | 'unknown'): string {
  const reason =
    why === 'navigated' ? 'the page navigated since it was read' : why === 'removed' ? 'that element is no longer on the page' : 'this tab never gave that reference';
  return `${ref} is stale or not found on the current page (${reason}). Re-read the page to get fresh references.`;
}

/**
 * The structure of the session's own document, or with `frameId` of that frame of the session's
 * tree; `book` is the tab's references, shared with its other documents.
 */
export function createDocumentStructure(client: () => Promise<CDPSession>, book: RefBook = newRefBook(), frameId?: string): DocumentStructure {
  let world: World | undefined;

  /** The session's own document, or the document of the frame `frameId` of its tree. */
  const ensureWorld = async (session: CDPSession): Promise<World> => {
    const { frameTree } = (await session.send('Page.getFrameTree')) as { frameTree: FrameTree };
    const frame = frameId === undefined ? frameTree.frame : findFrame(frameTree, frameId);
    if (!frame) throw new Error('the frame is no longer on the page');
    const { loaderId } = frame;
    if (world?.loaderId === loaderId) return world;
    const { executionContextId } = (await session.send('Page.createIsolatedWorld', { frameId: frame.id, worldName: WORLD_NAME, grantUniveralAccess: false })) as {
      executionContextId: number;
    };
    const installed = (await session.send('Runtime.evaluate', { expression: STRUCTURE_SOURCE, contextId: executionContextId })) as { exceptionDetails?: unknown };
    if (installed.exceptionDetails) throw new Error(`the structure script failed in the page: ${describeException(installed.exceptionDetails)}`);
    world = { loaderId, contextId: executionContextId };
    return world;
  };

  /**
   * Calls `fn(...args)` of the script in the current document; retried once if the document
   * changed under it. `byValue: false` answers the remote object's id instead of its value.
   */
  const evaluate = async <T>(fn: keyof StructureApi, args: unknown[], options: { byValue?: boolean; names?: boolean } = {}): Promise<{ value: T; loaderId: string }> => {
    const session = await client();
    for (let attempt = 1; ; attempt++) {
      const current = await ensureWorld(session);
      // A document the tree cannot name (gone mid-read) keeps the script's names; the call below says whether it is gone.
      if (options.names) await annotateFromAxTree(session, current.contextId, STRUCTURE_KEY).catch(() => undefined);
      const expression = `globalThis.${STRUCTURE_KEY}.${fn}(${args.map((a) => JSON.stringify(a)).join(', ')})`;
      const reply = (await session
        .send('Runtime.evaluate', { expression, contextId: current.contextId, returnByValue: options.byValue ?? true })
        .catch((error: unknown) => ({ lost: error }))) as { result?: { value?: T; objectId?: string }; exceptionDetails?: unknown; lost?: unknown };
      if (reply.lost !== undefined || reply.exceptionDetails) {
        const text = reply.lost !== undefined ? String(reply.lost) : describeException(reply.exceptionDetails);
        // The document went away between the frame check and the call: a new world, once.
        if (attempt < 2 && /Cannot find context|context was destroyed|Execution context|not defined|Cannot read properties of undefined/i.test(text)) {
          world = undefined;
          continue;
        }
        throw new Error(`the page could not be read: ${text}`);
      }
      const value = (options.byValue === false ? reply.result?.objectId : reply.result?.value) as T;
      return { value, loaderId: current.loaderId };
    }
  };
  /** A call of the page structure, typed by its declaration in the page code. */
  const call = <K extends keyof StructureApi>(fn: K, args: Parameters<StructureApi[K]>, options: { names?: boolean } = {}) => evaluate<Answer<K>>(fn, args, options);

  /** Why a reference cannot be used before the page is even asked, or undefined when it may be. */
  const precheck = async (ref: string): Promise<string | undefined> => {
    const match = /^ref_(\d+)$/.exec(ref.trim());
    if (!match) return `${JSON.stringify(ref)} is not an element reference: use a ref_N that read_page or find returned`;
    const entry = book.issued.get(Number(match[1]));
    if (entry === undefined || entry.owner !== self) return staleRefError(ref, 'unknown');
    const session = await client();
    const current = await ensureWorld(session);
    if (entry.loaderId !== current.loaderId) return staleRefError(ref, 'navigated');
    return undefined;
  };

  /** Records the references the page issued in this call (numbers from `from` up to `to`). */
  const issued = (from: number, to: number, loaderId: string) => {
    for (let n = from; n < to; n++) book.issued.set(n, { loaderId, owner: self });
    book.next = Math.max(book.next, to);
  };

  const withRef = async <T>(ref: string, run: () => Promise<StructureResult<T>>): Promise<StructureResult<T>> => {
    const refused = await precheck(ref);
    if (refused) return { ok: false, error: refused };
    return run();
  };

  const pageError = (ref: string, reply: Refusal): string => {
    switch (reply.error) {
      case 'stale':
        return staleRefError(ref, 'removed');
      case 'hidden':
        return `${ref} is not visible on the page (hidden or of zero size)`;
      case 'covered':
        return `${ref} is covered by another element (${reply.by}); close or scroll away what covers it, or act on that element`;
      case 'offscreen':
        return `${ref} could not be scrolled into the viewport`;
      case 'disabled':
        return `${ref} is disabled`;
      case 'readonly':
        return `${ref} is read-only: it takes no typed value (if a control beside it sets it, use that)`;
      case 'no-option':
        return `${ref} has no option with that value or text; its options include: ${reply.options.map((o) => JSON.stringify(o)).join(', ')}`;
      case 'option-disabled':
        return `that option of ${ref} is disabled`;
      case 'not-boolean':
        return `${ref} is a checkbox or radio button: give true or false`;
      case 'radio-clear':
        return `${ref} is a radio button and cannot be cleared: choose another option of its group`;
      case 'refused':
        return `the page did not let ${ref} change its state`;
      case 'file':
        return `${ref} is a file input: use file_upload`;
      case 'format':
        return `the page refused that value for ${ref} (an input of type ${reply.type}${reply.type === 'date' ? ': use YYYY-MM-DD' : reply.type === 'time' ? ': use HH:MM' : ''})`;
      case 'not-a-field':
        return `${ref} is a ${reply.role}, not a form field: click it, or find the field it belongs to (form_input takes text fields, selects, checkboxes, radio buttons, switches, comboboxes, date fields, grid cells and rich-text editors)`;
    }
  };

  const readTree = async (options: PageReadOptions): Promise<StructureResult<PageRead & { frames: FrameSpot[] }>> => {
    if (options.ref !== undefined) {
      const refused = await precheck(options.ref);
      if (refused) return { ok: false, error: refused };
    }
    const from = book.next;
    const { value, loaderId } = await call(
      'readPage',
      [{ next: from, filter: options.filter, wholePage: options.wholePage, depth: options.depth, ref: options.ref, maxChars: options.maxChars, optionsMax: options.optionsMax }],
      NAMED,
    );
    if (!value.ok) return { ok: false, error: staleRefError(options.ref ?? '', 'removed') };
    issued(from, value.next, loaderId);
    return { ok: true, value: { lines: value.lines, omitted: value.omitted, deeper: value.deeper, frames: value.frames } };
  };

  const candidates = async (): Promise<FoundElement[]> => (await call('findCandidates', [FIND_POOL], NAMED)).value;
  const lines = async (chosen: number[]) => {
    const from = book.next;
    const { value, loaderId } = await call('linesFor', [chosen, from]);
    issued(from, value.next, loaderId);
    return value.lines;
  };

  const self: DocumentStructure = {
    readTree,
    candidates,
    lines,

    async readPage(options) {
      const read = await readTree(options);
      return read.ok ? { ok: true, value: { lines: read.value.lines, omitted: read.value.omitted, deeper: read.value.deeper } } : read;
    },

    async find(rank, limit) {
      return lines(rank(await candidates()).slice(0, limit));
    },

    async frameHosts() {
      const from = book.next;
      const { value, loaderId } = await call('frameHosts', [from]);
      issued(from, value.next, loaderId);
      return value.refs;
    },

    async frameIdOf(ref) {
      if (await precheck(ref)) return null;
      const { value: objectId } = await evaluate<string | undefined>('lookup', [ref], { byValue: false });
      if (!objectId) return null;
      const session = await client();
      try {
        const { node } = (await session.send('DOM.describeNode', { objectId })) as { node: { frameId?: string } };
        return node.frameId ?? null;
      } finally {
        // A document gone took the object with it.
        await session.send('Runtime.releaseObject', { objectId }).catch(() => undefined);
      }
    },

    frameBox: (ref) =>
      withRef(ref, async () => {
        const { value } = await call('frameBox', [ref]);
        return value.ok ? { ok: true, value: { x: value.x, y: value.y } } : { ok: false, error: pageError(ref, value) };
      }),

    async frameHit(ref, point) {
      return (await call('frameHit', [ref, point.x, point.y])).value === true;
    },

    async pageText(maxChars) {
      return (await call('pageText', [maxChars])).value;
    },

    async contentDigest() {
      return (await call('contentDigest', [])).value.digest;
    },

    async documentDigest() {
      return (await call('contentDigest', [])).value;
    },

    pointOf: (ref) =>
      withRef(ref, async () => {
        const { value } = await call('point', [ref]);
        return value.ok ? { ok: true, value: { x: value.x, y: value.y } } : { ok: false, error: pageError(ref, value) };
      }),

    setValue: (ref, input) =>
      withRef(ref, async () => {
        const { value } = await call('setValue', [ref, input]);
        return value.ok ? { ok: true, value: { ...(value.shown === undefined ? {} : { shown: value.shown }), at: value.at } } : { ok: false, error: pageError(ref, value) };
      }),

    scrollTo: (ref) =>
      withRef(ref, async () => {
        const { value } = await call('scrollTo', [ref]);
        return value.ok ? { ok: true, value: null } : { ok: false, error: pageError(ref, value) };
      }),

    identify: (ref) =>
      withRef(ref, async () => {
        const { value } = await call('identify', [ref], NAMED);
        return value ? { ok: true, value: compact(value) } : { ok: false, error: staleRefError(ref, 'removed') };
      }),

    async identifyAt(point) {
      const { value } = await call('identifyAt', [point.x, point.y], NAMED);
      return value ? compact(value) : null;
    },

    async locate(identity) {
      const from = book.next;
      const { value, loaderId } = await call('locate', [identity, from], NAMED);
      if (!value.ok) {
        const what = `${identity.role}${identity.name ? ` "${identity.name}"` : ''}`;
        return { ok: false, error: value.error === 'ambiguous' ? `${value.count} elements match ${what}` : `no ${what} on the page` };
      }
      issued(from, value.next, loaderId);
      return { ok: true, value: { ref: value.ref, enabled: value.enabled, inView: value.inView } };
    },

    async focused() {
      const { value } = await call('focused', [], NAMED);
      return value ? { identity: compact(value.identity), editable: value.editable } : null;
    },

    focus: (ref) =>
      withRef(ref, async () => {
        const { value } = await call('focus', [ref], NAMED);
        return value ? { ok: true, value: compact(value) } : { ok: false, error: `${ref} cannot take the keyboard focus` };
      }),

    async hideText(ref, shownAs) {
      return (await call('hideText', [ref, shownAs])).value === true;
    },

    async mark(ref, name, value) {
      if (await precheck(ref)) return false;
      return (await call('mark', [ref, name, value])).value;
    },

    widget: (ref) =>
      withRef(ref, async () => {
        const { value } = await call('widget', [ref]);
        return value ? { ok: true, value } : { ok: false, error: staleRefError(ref, 'removed') };
      }),

    popupOptions: (ref) =>
      withRef(ref, async () => {
        const from = book.next;
        const { value, loaderId } = await call('popupOptions', [ref, from], NAMED);
        if (!value) return { ok: false, error: staleRefError(ref, 'removed') };
        issued(from, value.next, loaderId);
        return { ok: true, value: value.options };
      }),

    async calendar() {
      const from = book.next;
      const { value, loaderId } = await call('calendar', [from], NAMED);
      issued(from, value.next, loaderId);
      return value.view;
    },

    async describe(ref) {
      if (await precheck(ref)) return null;
      return (await call('describe', [ref], NAMED)).value;
    },
  };
  return self;
}

/** The identity without its absent fields, so that it compares and serialises cleanly. */
function compact(identity: ElementIdentity): ElementIdentity {
  const kept = Object.entries(identity).filter(([key, v]) => key === 'name' || (v !== undefined && v !== null && v !== ''));
  return { ...(Object.fromEntries(kept) as unknown as ElementIdentity), name: identity.name ?? '' };
}

function describeException(details: unknown): string {
  const d = details as { exception?: { description?: string }; text?: string } | undefined;
  return (d?.exception?.description ?? d?.text ?? 'unknown error').split('\n')[0] ?? 'unknown error';
}
