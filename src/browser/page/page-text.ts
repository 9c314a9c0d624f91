/** The page's text, for get_page_text. */
import { editable } from './dom.js';
import { markedElements } from './secret-fields.js';
import { textOf } from './semantics.js';

/** An editor's text shorter than this is not looked for in the page's text (a `7` would mask every 7). */
const EDITOR_TEXT_MIN = 4;

/** The page's visible text, the main content first when the page marks one. */
export function pageText(maxChars: number): { text: string; total: number; cut: boolean } {
  const main = document.querySelector('main, [role=main], article');
  const body = document.body || document.documentElement;
  const readable = (el: Element) => (typeof (el as HTMLElement).innerText === 'string' ? (el as HTMLElement).innerText : textOf(el)).replace(/[ \t]+/g, ' ').replace(/\n{3,}/g, '\n\n').trim();
  let text = main ? readable(main) : readable(body);
  if (main) {
    const rest = readable(body);
    const mainText = text;
    if (rest.length > mainText.length) text = mainText + '\n\n---\n' + rest.replace(mainText, '').trim();
  }
  // An editor (contenteditable) the worker put a secret into is part of the page's text: what it
  // holds now reads as its placeholder. A field's value is never part of it.
  for (const { el, shownAs } of markedElements()) {
    if (!editable(el) || !el.isConnected) continue;
    const held = readable(el);
    if (held.length >= EDITOR_TEXT_MIN) text = text.split(held).join(shownAs);
  }
  const cutAt = text.length > maxChars;
  return { text: cutAt ? text.slice(0, maxChars) : text, total: text.length, cut: cutAt };
}
