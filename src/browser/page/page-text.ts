/** The page's text: all of it (get_page_text), where a value shows, and what an element says now. */
import { inputType, isInput } from './dom.js';
import type { ElementIdentity } from './shapes.js';
import { identity } from './targets.js';
import { role, textOf, visibility } from './semantics.js';

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

/** Where a value shows on the page: the nearest element with a role around each text that holds it. */
export function findText(value: string, limit: number): Array<{ identity: ElementIdentity; text: string }> {
  const out: Array<{ identity: ElementIdentity; text: string }> = [];
  const seen = new Set<Element>();
  const add = (el: Element, text: string) => {
    if (seen.has(el) || out.length >= limit) return;
    seen.add(el);
    out.push({ identity: identity(el), text });
  };
  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode() as Text | null; node && out.length < limit; node = walker.nextNode() as Text | null) {
    if (!node.data.includes(value)) continue;
    let el = node.parentElement;
    while (el && el.parentElement && !role(el)) el = el.parentElement;
    if (!el || visibility(el) === 'gone') continue;
    const text = textOf(el);
    if (text.includes(value)) add(el, text);
  }
  for (const input of Array.from(document.querySelectorAll('input, textarea, output'))) {
    if (out.length >= limit) break;
    const v = input.localName === 'output' ? input.textContent : (input as HTMLInputElement | HTMLTextAreaElement).value;
    if (v && String(v).includes(value) && !(isInput(input) && inputType(input) === 'password')) add(input, String(v));
  }
  return out;
}

/** The text of the element an identity names by its place (test id, id, path), whatever it now says. */
export function readText(want: ElementIdentity): string | null {
  const byRole = (el: Element | null): el is Element => !!el && (role(el) || el.localName) === want.role;
  let el: Element | null = null;
  if (want.testId) el = document.querySelector('[data-testid="' + CSS.escape(want.testId) + '"], [data-test="' + CSS.escape(want.testId) + '"]');
  if (!byRole(el) && want.id) el = document.getElementById(want.id);
  if (!byRole(el) && want.path) {
    try {
      el = document.querySelector(want.path.split('>').join(' > '));
    } catch {
      el = null;
    }
  }
  if (!byRole(el) || visibility(el) === 'gone') return null;
  if (el.localName === 'input' || el.localName === 'textarea') return inputType(el) === 'password' ? null : (el as HTMLInputElement | HTMLTextAreaElement).value;
  return textOf(el);
}
