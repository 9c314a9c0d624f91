/** The page's text, for get_page_text. */
import { textOf } from './semantics.js';

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
  const cutAt = text.length > maxChars;
  return { text: cutAt ? text.slice(0, maxChars) : text, total: text.length, cut: cutAt };
}
