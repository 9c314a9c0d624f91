/**
 * The browser's own names (ax-names.ts on the Node side reads them from Chromium's accessibility
 * tree and hands them here): element → role, name, description. Kept until the document changes;
 * a mutation observer says when it did, so two reads of a still page ask the browser once.
 */
import type { AxInfo } from './shapes.js';

const axInfo = new WeakMap<Element, AxInfo>();
let axStale = true;

/** Starts watching the document for changes (once, when the structure is installed). */
export function watchForNames(): void {
  new MutationObserver(() => {
    axStale = true;
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
}

/** Whether the document changed since the names were last given (and from now on: not). */
export function axDirty(): boolean {
  const was = axStale;
  axStale = false;
  return was;
}

export function annotate(infos: AxInfo[], elements: Array<Node | null | undefined>): void {
  elements.forEach((el, i) => {
    const info = infos[i];
    if (el && el.nodeType === 1 && info) axInfo.set(el as Element, info);
  });
}

/** What the browser said of an element, when it was asked. */
export const axOf = (el: Element): AxInfo | undefined => axInfo.get(el);

export function axDescription(el: Element): string {
  const ax = axInfo.get(el);
  return ax ? ax.description : '';
}
