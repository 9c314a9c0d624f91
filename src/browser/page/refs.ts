/**
 * References (`ref_N`) to this document's elements: a weak map each way, for this document only.
 * The numbers come from the worker (`state.next`), which keeps one sequence per tab, so a
 * reference is never reused in a tab, even across documents.
 */

/** The numbering of one call: the next free number, and the focused element (read_page marks it). */
export interface RefState {
  next: number;
  focused?: Element | null;
}

const refs = new Map<string, WeakRef<Element>>();
const ids = new WeakMap<Element, string>();

export function refOf(el: Element, state: RefState): string {
  let ref = ids.get(el);
  if (ref && refs.get(ref)?.deref() === el) return ref;
  ref = 'ref_' + state.next++;
  ids.set(el, ref);
  refs.set(ref, new WeakRef(el));
  return ref;
}

/** The element a reference names, while it is on the page. */
export function lookup(ref: string): Element | null {
  const el = refs.get(ref)?.deref();
  if (!el || !el.isConnected) return null;
  return el;
}
