/**
 * What a document shows, as one short digest (docs/action-spaces.md#stuck-loops): two reads of
 * it are equal when nothing the model is shown changed in between. It is read after each action
 * the agent repeats, so it has to be cheap, and it is hashed here, in the page, so that only the
 * digest crosses to the worker. It covers:
 *
 * - the text as rendered (`innerText`, which also tells what is shown from what is hidden), each
 *   field's value and checked state, the title, how far the document is scrolled, and where every
 *   element scrolled away from its start is (an inner panel too);
 * - the element with the keyboard focus, as its path from the top document (through shadow
 *   roots and frames of the page's origin), so a Tab that moves the focus is a change;
 * - the pixels of every canvas, drawn small (CANVAS_EDGE) and hashed, so a drawing that changes
 *   is a change; a canvas the page cannot read back (tainted by another site) counts by its size;
 * - the same for each frame of the page's origin, read from here. Frames of other sites are out
 *   of this script's reach: it counts them, and the worker digests each in its own document
 *   (frame-structure.ts) and joins the digests.
 */
import { deepActive, frameDoc, parentOf } from './dom.js';

/** Frames of the page's origin inside each other are read this deep. */
const NESTING_MAX = 4;
/** A canvas is drawn at most this many pixels across before its pixels are hashed. */
const CANVAS_EDGE = 256;

/** FNV-1a, 32 bits: a fingerprint, not a secret; two different pages colliding would cost one warning at most. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** The digest, and how many frames of other sites (not read here) the document holds. */
export interface DocumentDigest {
  digest: string;
  otherSites: number;
}

export function contentDigest(): DocumentDigest {
  const state = { otherSites: 0 };
  const parts = [digestOf(document, state, 0), `f${fnv1a(focusPath()).toString(36)}`];
  return { digest: parts.join('.'), otherSites: state.otherSites };
}

/**
 * Where each element scrolled away from its start is: read from the elements as they are now,
 * not counted from scroll events (those arrive a frame after the scroll, so a count read right
 * after an action could miss the action's own scroll, and the outcome would depend on timing).
 */
function scrolledPlaces(doc: Document): string {
  let places = '';
  const all = doc.body ? doc.body.getElementsByTagName('*') : [];
  for (let i = 0; i < all.length; i++) {
    const el = all[i]!;
    if (el.scrollTop !== 0 || el.scrollLeft !== 0) places += `${i}:${el.scrollLeft},${el.scrollTop};`;
  }
  return places;
}

function digestOf(doc: Document, state: { otherSites: number }, nesting: number): string {
  const body = doc.body || doc.documentElement;
  const text = body ? body.innerText : '';
  let fields = '';
  for (const el of Array.from(doc.querySelectorAll('input, textarea, select'))) {
    const field = el as HTMLInputElement;
    fields += `${field.value}\u0000${field.checked ? 1 : 0}\u0001`;
  }
  let pixels = '';
  for (const canvas of Array.from(doc.querySelectorAll('canvas'))) pixels += `${canvasPrint(canvas)},`;
  const root = doc.scrollingElement;
  const place = `${doc.title}\u0000${root ? `${root.scrollLeft},${root.scrollTop}` : ''}\u0000${scrolledPlaces(doc)}`;
  let out = `${text.length}.${fnv1a(text).toString(36)}.${fnv1a(fields).toString(36)}.${fnv1a(place).toString(36)}${pixels ? `.c${fnv1a(pixels).toString(36)}` : ''}`;
  for (const frame of Array.from(doc.querySelectorAll('iframe, frame')) as Array<HTMLIFrameElement>) {
    const inner = frameDoc(frame);
    // A frame of another site: its document is digested by the worker, in its own structure.
    if (!inner) state.otherSites++;
    else if (nesting < NESTING_MAX) out += `[${digestOf(inner, state, nesting + 1)}]`;
  }
  return out;
}

/** The hash of a canvas's pixels, drawn small; its size alone when the page may not read them back. */
function canvasPrint(canvas: HTMLCanvasElement): string {
  const { width, height } = canvas;
  if (!width || !height) return '0';
  const scale = Math.min(1, CANVAS_EDGE / Math.max(width, height));
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  try {
    // A new scratch canvas each time: one that drew a tainted canvas stays unreadable.
    const scratch = document.createElement('canvas');
    scratch.width = w;
    scratch.height = h;
    const ctx = scratch.getContext('2d', { willReadFrequently: true });
    if (!ctx) return `${width}x${height}`;
    // High quality averages the pixels a cell covers, so a thin stroke still moves the cell.
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(canvas, 0, 0, w, h);
    const data = new Uint32Array(ctx.getImageData(0, 0, w, h).data.buffer);
    let hash = 0x811c9dc5;
    for (let i = 0; i < data.length; i++) {
      hash ^= data[i]!;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash.toString(36);
  } catch {
    // Tainted by another site's image: its pixels are not the page's to read.
    return `${width}x${height}`;
  }
}

/** Where the keyboard focus is: the focused element's path from the top (tag and place among its siblings at each step). */
function focusPath(): string {
  let el = deepActive();
  let path = '';
  for (let guard = 0; el && guard < 200; guard++) {
    const up: Element | null = parentOf(el);
    const siblings = el.parentElement ? el.parentElement.children : (el.getRootNode() as Document | ShadowRoot).children;
    path = `${el.localName}${Array.prototype.indexOf.call(siblings, el)}${el.parentElement || !up ? '/' : '#'}${path}`;
    // At a document's root the path goes on from the frame element that shows it (same origin only).
    el = up ?? (el.ownerDocument.defaultView?.frameElement ?? null);
  }
  return path;
}
