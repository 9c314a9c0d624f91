/**
 * Walking what the page renders: element kinds (by tag name, never `instanceof`: an element of a
 * same-origin frame belongs to that frame's window and its constructors), the children of a node
 * as laid out (into shadow roots, slots and same-origin frames), boxes in the top window's
 * coordinates, and the focused element.
 */

export const isElement = (n: Node): n is Element => n.nodeType === 1;
/** An element or a shadow root: what the walks descend into. */
export const isContainer = (n: Node): n is Element | DocumentFragment => n.nodeType === 1 || n.nodeType === 11;
export const isText = (n: Node): n is Text => n.nodeType === 3;
export const isInput = (el: Element): el is HTMLInputElement => el.localName === 'input';
export const isSelect = (el: Element): el is HTMLSelectElement => el.localName === 'select';
export const isTextArea = (el: Element): el is HTMLTextAreaElement => el.localName === 'textarea';
export const isFrame = (el: Element): el is HTMLIFrameElement | HTMLFrameElement => el.localName === 'iframe' || el.localName === 'frame';
/** A form field with a value (input, select, textarea). */
export const isField = (el: Element): el is HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement => isInput(el) || isSelect(el) || isTextArea(el);
/** An HTML element's editing state (an SVG element has none). */
export const editable = (el: Element | null): boolean => !!el && (el as Partial<HTMLElement>).isContentEditable === true;

/** A box in the top window's coordinates. */
export interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
  width: number;
  height: number;
}

/** The document of a same-origin frame; null for another origin's (its content is not read). */
export function frameDoc(el: HTMLIFrameElement | HTMLFrameElement): Document | null {
  try {
    return el.contentDocument || null;
  } catch {
    return null;
  }
}

/** Where a frame's document starts, in the top window's coordinates (0, 0 for the top document). */
export function frameOrigin(doc: Document): { x: number; y: number } {
  let x = 0;
  let y = 0;
  let win = doc.defaultView;
  while (win && win.frameElement) {
    const fe = win.frameElement;
    const r = fe.getBoundingClientRect();
    const s = getComputedStyle(fe);
    x += r.left + fe.clientLeft + (parseFloat(s.paddingLeft) || 0);
    y += r.top + fe.clientTop + (parseFloat(s.paddingTop) || 0);
    win = fe.ownerDocument.defaultView;
  }
  return { x, y };
}

/** An element's box in the top window's coordinates, wherever its frame is. */
export function rectOf(el: Element): Box {
  const r = el.getBoundingClientRect();
  if (el.ownerDocument === document) return r;
  const o = frameOrigin(el.ownerDocument);
  return { left: r.left + o.x, right: r.right + o.x, top: r.top + o.y, bottom: r.bottom + o.y, width: r.width, height: r.height };
}

/** A node's children as the page renders them: a frame's document, a shadow root's content, a slot's assigned nodes. */
export function children(node: Node): Node[] {
  if (isElement(node)) {
    if (isFrame(node)) {
      const doc = frameDoc(node);
      return doc && doc.documentElement ? [doc.documentElement] : [];
    }
    if (node.shadowRoot) return Array.from(node.shadowRoot.childNodes);
    if (node.localName === 'slot') {
      const assigned = (node as HTMLSlotElement).assignedNodes({ flatten: true });
      return assigned.length ? assigned : Array.from(node.childNodes);
    }
  }
  return Array.from(node.childNodes);
}

/** The element with the focus, inside shadow roots and same-origin frames. */
export function deepActive(): Element | null {
  let el = document.activeElement;
  for (let guard = 0; el && guard < 30; guard++) {
    const inner = el.shadowRoot ? el.shadowRoot.activeElement : null;
    const doc = isFrame(el) ? frameDoc(el) : null;
    if (inner) el = inner;
    else if (doc && doc.activeElement) el = doc.activeElement;
    else break;
  }
  return el;
}

/** The element a host of a shadow root or the parent holds: one step up, across shadow boundaries. */
export function parentOf(node: Element): Element | null {
  const root = node.getRootNode();
  return node.parentElement || ((root as Partial<ShadowRoot>).host ?? null);
}

export function inViewport(el: Element): boolean {
  const r = rectOf(el);
  return r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
}

export function inputType(el: Element): string {
  return (el.getAttribute('type') || 'text').toLowerCase();
}
