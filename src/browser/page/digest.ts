/**
 * What a document shows, as one short digest (docs/action-spaces.md#stuck-loops): two reads of
 * it are equal when the page did not change in between. It is read after each action the agent
 * repeats, so it has to be cheap: the text as rendered (`innerText`, which also tells what is
 * shown from what is hidden), each field's value and checked state, the document's title, how
 * far it is scrolled, and how many times anything in it scrolled (an inner panel too) since the
 * structure script was installed. Hashed here, in the page, so that only the digest crosses to
 * the worker. Frames' documents are not read: what they show is their own.
 */

let scrolls = 0;

/** Counts every scroll of the document or of an element in it (scroll events reach a capturing window listener). */
export function watchScrolls(): void {
  addEventListener('scroll', () => scrolls++, { capture: true, passive: true });
}

/** FNV-1a, 32 bits: a fingerprint, not a secret; two different pages colliding would cost one warning at most. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

export function contentDigest(): string {
  const body = document.body || document.documentElement;
  const text = body ? body.innerText : '';
  let fields = '';
  for (const el of Array.from(document.querySelectorAll('input, textarea, select'))) {
    const field = el as HTMLInputElement;
    fields += `${field.value}\u0000${field.checked ? 1 : 0}\u0001`;
  }
  const root = document.scrollingElement;
  const place = `${document.title}\u0000${root ? `${root.scrollLeft},${root.scrollTop}` : ''}\u0000${scrolls}`;
  return `${text.length}.${fnv1a(text).toString(36)}.${fnv1a(fields).toString(36)}.${fnv1a(place).toString(36)}`;
}
