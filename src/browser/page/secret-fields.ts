/**
 * The elements the worker typed or set a secret into (docs/secrets.md#fields): each reads as the
 * placeholder the model wrote, in every read of the page, whatever it holds later. A page that
 * changes such a field's value (`7` left of a PIN after a widget split it, a reformatted card
 * number) cannot make it read as text: the mark is on the element, not on the value.
 *
 * The marks live in this script's isolated world (a WeakMap of the page's elements): the page's
 * own scripts can neither see nor remove them, and no attribute or style of the page decides
 * them. A page can still copy the value elsewhere (into another element, a text node); that copy
 * is what the value rules (secret-forms.ts, on the worker's side) are for.
 */

const marked = new WeakMap<Element, string>();
/** The marked elements, for reads that walk text rather than elements (page-text.ts). Weak: a removed element is forgotten. */
const all = new Set<WeakRef<Element>>();

/** Marks `el` as holding a secret; it reads as `shownAs` (the model's own `{{path}}` text) from now on. */
export function markSecret(el: Element, shownAs: string): void {
  if (!marked.has(el)) all.add(new WeakRef(el));
  marked.set(el, shownAs);
}

/** What a marked element reads as; undefined when the worker never put a secret into it. */
export function secretShown(el: Element): string | undefined {
  return marked.get(el);
}

/** The marked elements still in memory, and what each reads as. */
export function markedElements(): Array<{ el: Element; shownAs: string }> {
  const out: Array<{ el: Element; shownAs: string }> = [];
  for (const ref of all) {
    const el = ref.deref();
    if (!el) all.delete(ref);
    else out.push({ el, shownAs: marked.get(el)! });
  }
  return out;
}
