/**
 * The worker's page reads (`read_page`, `find`, the opening and a hand-over's element lists) as
 * a scripted model reads them: one element per line, `role "name" [ref_N] attributes`, indented
 * as a tree by `read_page` without a filter or with `"all"`. Names and values are quoted with
 * `\` escapes, as the worker writes them (docs/action-spaces.md#read_page).
 */

export interface PageElement {
  role: string;
  /** The accessible name ('' when the element has none). */
  name: string;
  ref?: string;
  /** `value="…"`: a field's value (squashed to one line, cut at 200 characters), a combobox's shown option. */
  value?: string;
  /** A link's `href` as the page wrote it. */
  href?: string;
  /** `checked` / `unchecked`; undefined for elements that have no such state. */
  checked?: boolean;
  selected: boolean;
  /** Indentation, in steps of two spaces. */
  depth: number;
  /** The name of the dialog this element is inside, when it is. */
  dialog?: string;
  /** The whole line, trimmed. */
  line: string;
}

const QUOTED = String.raw`"((?:[^"\\]|\\.)*)"`;
const LINE = new RegExp(String.raw`^( *)([a-z][a-z-]*)(?: ${QUOTED})?(?: \[(ref_\d+)\])?(.*)$`);

export function parseRead(text: string): PageElement[] {
  const elements: PageElement[] = [];
  const dialogs: Array<{ depth: number; name: string }> = [];
  for (const raw of text.split('\n')) {
    const match = LINE.exec(raw);
    if (!match) continue;
    const [, indent, role, quotedName, ref, rest] = match;
    const depth = Math.floor(indent!.length / 2);
    while (dialogs.length > 0 && dialogs.at(-1)!.depth >= depth) dialogs.pop();
    const attrs = rest ?? '';
    const value = new RegExp(String.raw`(?:^| )value=${QUOTED}`).exec(attrs)?.[1];
    const href = new RegExp(String.raw`(?:^| )href=${QUOTED}`).exec(attrs)?.[1];
    const state = / (checked|unchecked)(?: |$)/.exec(attrs)?.[1];
    const element: PageElement = {
      role: role!,
      name: quotedName === undefined ? '' : unquote(quotedName),
      ...(ref ? { ref } : {}),
      ...(value !== undefined ? { value: unquote(value) } : {}),
      ...(href !== undefined ? { href: unquote(href) } : {}),
      ...(state ? { checked: state === 'checked' } : {}),
      selected: / selected(?: |$)/.test(attrs),
      depth,
      ...(dialogs.length > 0 ? { dialog: dialogs.at(-1)!.name } : {}),
      line: raw.trim(),
    };
    elements.push(element);
    if (role === 'dialog') dialogs.push({ depth, name: element.name });
  }
  return elements;
}

/** The text inside a read's quotes: `\"` and `\\` escape themselves, `\n` (and `\r`, `\t`) a line break in a value. */
function unquote(text: string): string {
  const named: Record<string, string> = { n: '\n', r: '\r', t: '\t' };
  return text.replace(/\\(.)/g, (_all, c: string) => named[c] ?? c);
}

/** Whitespace squashed, as the worker squashes values and names. */
export function squash(text: string): string {
  return text.replace(/[\s\u00a0]+/g, ' ').trim();
}

/**
 * Whether a value the page shows is `expected`: the same once squashed, or its start when the
 * worker cut it (200 characters, ending in `…`).
 */
export function shows(shown: string | undefined, expected: string): boolean {
  if (shown === undefined) return expected === '';
  const a = squash(shown);
  const b = squash(expected);
  if (a === b) return true;
  return a.endsWith('\u2026') && b.startsWith(a.slice(0, -1));
}
