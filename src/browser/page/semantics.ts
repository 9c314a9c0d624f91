/**
 * What an element is to the agent: whether it shows, its role, its accessible name, its value
 * and its text, computed from what the page renders (the DOM as laid out, with computed
 * visibility), never from the raw source, so hidden text does not reach the model. The browser's
 * own names (ax-store.ts) win where it gave one.
 */
import { axOf } from './ax-store.js';
import { children, editable, inputType, isElement, isField, isInput, isSelect, isText } from './dom.js';
import { cut, multiline, NAME_MAX, squash } from './text.js';
import { secretShown } from './secret-fields.js';

export const INTERACTIVE = new Set(['link', 'button', 'textbox', 'searchbox', 'combobox', 'listbox', 'option', 'checkbox', 'radio',
  'switch', 'slider', 'spinbutton', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'treeitem', 'clickable']);
/** Roles whose name is their visible content: that text is not repeated as text lines below them. */
export const NAME_FROM_CONTENT = new Set(['link', 'button', 'heading', 'option', 'tab', 'menuitem', 'menuitemcheckbox',
  'menuitemradio', 'treeitem', 'cell', 'gridcell', 'columnheader', 'rowheader', 'checkbox', 'radio', 'switch', 'clickable', 'tooltip']);
/** Roles that hold running text: reported with all their text, unless controls sit inside them. */
export const TEXTUAL = new Set(['paragraph', 'listitem', 'cell', 'gridcell', 'columnheader', 'rowheader', 'term', 'definition', 'caption',
  'legend', 'code', 'blockquote', 'status', 'alert']);
export const CONTROLS = 'a[href], button, input:not([type=hidden]), select, textarea, [role], [tabindex], [contenteditable]';
export const STRUCTURED = CONTROLS + ', h1, h2, h3, h4, h5, h6, img[alt], table, ul, ol, dl, p, li, form, nav, main, iframe';
/** Containers that group content: reported (with a name when they have one) to give the tree its shape. */
export const LANDMARKS = new Set(['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'region', 'form', 'search',
  'dialog', 'alertdialog', 'group', 'list', 'table', 'row', 'grid', 'tablist', 'tabpanel', 'menu', 'menubar', 'tree',
  'radiogroup', 'toolbar', 'article', 'figure', 'img', 'heading', 'iframe', 'progressbar', 'meter', 'separator']);
export const TEXT_INPUTS = new Set(['text', 'email', 'tel', 'url', 'password', 'search', 'number', 'date', 'time', 'datetime-local',
  'month', 'week', 'color', '']);
const SECTIONING = 'article, aside, main, nav, section';

export type Visibility = 'gone' | 'hidden' | 'shown';

/** 'gone' (the subtree renders nothing), 'hidden' (this element does not show, its children may), or 'shown'. */
export function visibility(el: Element): Visibility {
  if (el.getAttribute('aria-hidden') === 'true' || el.hasAttribute('inert')) return 'gone';
  const style = getComputedStyle(el);
  if (style.display === 'none') return 'gone';
  if (style.display === 'contents') return 'hidden';
  if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return style.visibility !== 'hidden' && drawnByLabel(el) ? 'shown' : 'hidden';
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return 'hidden';
  // The "visually hidden" pattern (a 1px clipped box) is for screen readers, not for the eye:
  // nothing inside it is shown, so nothing inside it is read.
  const clipped = (r.width <= 2 && r.height <= 2 && style.overflow === 'hidden') || style.clip === 'rect(0px, 0px, 0px, 0px)' || style.clipPath === 'inset(50%)';
  if (clipped) return drawnByLabel(el) ? 'shown' : 'gone';
  return 'shown';
}

/**
 * A checkbox or radio made invisible (transparent, clipped) under a label that shows: the usual
 * custom-drawn control (a switch of a design system). It is reported; the label is what one
 * clicks (pointOf accepts a hit on it).
 */
function drawnByLabel(el: Element): boolean {
  return isInput(el) && (el.type === 'checkbox' || el.type === 'radio') && !!el.labels && Array.from(el.labels).some((l) => l.getBoundingClientRect().width > 2);
}

export function role(el: Element): string | null {
  const explicit = squash(el.getAttribute('role')).split(' ')[0];
  if (explicit && explicit !== 'presentation' && explicit !== 'none' && explicit !== 'generic') return explicit;
  switch (el.localName) {
    case 'a': case 'area': return el.hasAttribute('href') ? 'link' : null;
    case 'button': return 'button';
    case 'input': {
      const t = inputType(el);
      if (t === 'hidden') return null;
      if (t === 'button' || t === 'submit' || t === 'reset' || t === 'image') return 'button';
      if (t === 'checkbox') return el.getAttribute('switch') !== null ? 'switch' : 'checkbox';
      if (t === 'radio') return 'radio';
      if (t === 'range') return 'slider';
      if (t === 'number') return 'spinbutton';
      if (t === 'search') return el.hasAttribute('list') ? 'combobox' : 'searchbox';
      if (t === 'file') return 'button';
      return el.hasAttribute('list') ? 'combobox' : 'textbox';
    }
    case 'select': return isSelect(el) && (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
    case 'option': return 'option';
    case 'textarea': return 'textbox';
    case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
    case 'img': return el.getAttribute('alt') === '' ? null : 'img';
    case 'svg': return el.getAttribute('aria-label') || el.querySelector('title') ? 'img' : null;
    case 'nav': return 'navigation';
    case 'main': return 'main';
    case 'aside': return 'complementary';
    case 'header': return el.parentElement && el.parentElement.closest(SECTIONING) ? null : 'banner';
    case 'footer': return el.parentElement && el.parentElement.closest(SECTIONING) ? null : 'contentinfo';
    case 'section': return el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') ? 'region' : null;
    case 'form': return 'form';
    case 'search': return 'search';
    case 'article': return 'article';
    case 'figure': return 'figure';
    case 'ul': case 'ol': case 'menu': return 'list';
    case 'li': return 'listitem';
    case 'dl': return 'list';
    case 'dt': return 'term';
    case 'dd': return 'definition';
    case 'table': return 'table';
    case 'caption': return 'caption';
    case 'tr': return 'row';
    case 'th': return el.getAttribute('scope') === 'row' ? 'rowheader' : 'columnheader';
    case 'td': return 'cell';
    case 'dialog': return 'dialog';
    case 'details': return 'group';
    case 'summary': return 'button';
    case 'fieldset': return 'group';
    case 'legend': return 'legend';
    case 'p': return 'paragraph';
    case 'blockquote': return 'blockquote';
    case 'pre': case 'code': return 'code';
    case 'iframe': case 'frame': return 'iframe';
    case 'progress': return 'progressbar';
    case 'meter': return 'meter';
    case 'output': return 'status';
    case 'hr': return 'separator';
  }
  if (editable(el) && (el.parentElement === null || !editable(el.parentElement))) return 'textbox';
  // A role the browser gives that the markup does not show (a custom element's internals).
  const ax = axOf(el);
  if (ax && INTERACTIVE.has(ax.role)) return ax.role;
  if ((el as HTMLElement).tabIndex >= 0 && el.hasAttribute('tabindex')) return 'clickable';
  // A plain element styled as clickable (cursor: pointer) whose parent is not: the usual
  // shape of a custom button built from a div.
  if (getComputedStyle(el).cursor === 'pointer' && el.parentElement && getComputedStyle(el.parentElement).cursor !== 'pointer') return 'clickable';
  return null;
}

/**
 * Visible text of a subtree, images by their alt text; the control's own value left out. Joined
 * as Chromium joins a name from content: the text of inline elements runs on (`<a>Search</a>:`
 * is "Search:"), a box of its own (a block, an inline-block, a flex item, a table cell, a line
 * break, an image) stands apart by a space. `skip`: an element whose text is not wanted (a
 * field inside its own label); `keep`: a filter on elements (find's label text leaves controls out).
 */
export function textOf(node: Node, skip?: Node, keep?: (el: Element) => boolean): string {
  let out = '';
  const visit = (n: Node) => {
    if (n === skip) return;
    if (isText(n)) {
      out += n.data;
      return;
    }
    if (!isElement(n)) return;
    if (visibility(n) === 'gone') return;
    const tag = n.localName;
    if (tag === 'img') {
      out += ' ' + (n.getAttribute('alt') || '') + ' ';
      return;
    }
    if (tag === 'br') {
      out += ' ';
      return;
    }
    if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'noscript') return;
    if (isField(n) || (keep && n !== node && !keep(n))) return;
    const display = getComputedStyle(n).display;
    const apart = display !== 'inline' && display !== 'contents';
    if (apart) out += ' ';
    for (const c of children(n)) visit(c);
    if (apart) out += ' ';
  };
  visit(node);
  return squash(out);
}

/** Whether an element shows its text's line breaks (`pre`, `white-space: pre-wrap`, …). */
const keepsLines = (el: Element): boolean => /^(pre|pre-wrap|pre-line|break-spaces)$/.test(getComputedStyle(el).whiteSpace);

/** The text an element shows, with its line breaks when it shows them (pre-formatted text), else as textOf. */
export function shownText(el: Element): string {
  return keepsLines(el) && typeof (el as HTMLElement).innerText === 'string' ? multiline((el as HTMLElement).innerText) : textOf(el);
}

/** The elements an id-list attribute names (`aria-labelledby`, `aria-controls`), in its own tree. */
export function byIds(el: Element, attr: string): Element[] {
  const list = squash(el.getAttribute(attr)).split(' ').filter(Boolean);
  const root = el.getRootNode() as Partial<Document>;
  return list.map((id) => (root.getElementById ? root.getElementById(id) : document.getElementById(id))).filter((found): found is HTMLElement => !!found);
}

export function name(el: Element, r: string | null): string {
  // The browser's name when it gives one; the rules below are for elements it left unnamed.
  const ax = axOf(el);
  if (ax && ax.name) return cut(ax.name, NAME_MAX);
  const labelled = byIds(el, 'aria-labelledby');
  if (labelled.length) return cut(squash(labelled.map((l) => textOf(l)).join(' ')), NAME_MAX);
  const aria = squash(el.getAttribute('aria-label'));
  if (aria) return cut(aria, NAME_MAX);
  const tag = el.localName;
  if (isField(el)) {
    const t = isInput(el) ? inputType(el) : '';
    if (t === 'button' || t === 'submit' || t === 'reset') return cut(squash(el.value) || (t === 'submit' ? 'Submit' : t === 'reset' ? 'Reset' : ''), NAME_MAX);
    if (t === 'image') return cut(squash(el.getAttribute('alt')) || 'Submit', NAME_MAX);
    const labels = el.labels ? Array.from(el.labels) : [];
    const fromLabels = squash(labels.map((l) => textOf(l, el)).join(' '));
    if (fromLabels) return cut(fromLabels, NAME_MAX);
    return cut(squash(el.getAttribute('title')) || squash(el.getAttribute('placeholder')), NAME_MAX);
  }
  if (tag === 'img' || tag === 'area') return cut(squash(el.getAttribute('alt')) || squash(el.getAttribute('title')), NAME_MAX);
  if (tag === 'svg') {
    const t = el.querySelector('title');
    return cut(squash(t ? t.textContent : ''), NAME_MAX);
  }
  if (tag === 'fieldset') {
    const legend = el.querySelector('legend');
    if (legend) return cut(textOf(legend), NAME_MAX);
  }
  if (tag === 'table') {
    const caption = el.querySelector('caption');
    if (caption) return cut(textOf(caption), NAME_MAX);
  }
  if (tag === 'iframe' || tag === 'frame') return cut(squash(el.getAttribute('title')) || squash(el.getAttribute('name')), NAME_MAX);
  if (r === 'textbox') return cut(squash(el.getAttribute('title')) || squash(el.getAttribute('aria-placeholder')), NAME_MAX);
  if (r && NAME_FROM_CONTENT.has(r)) return cut(textOf(el) || squash(el.getAttribute('title')), NAME_MAX);
  return cut(squash(el.getAttribute('title')), NAME_MAX);
}

export function isDisabled(el: Element): boolean {
  if (el.getAttribute('aria-disabled') === 'true') return true;
  return typeof el.matches === 'function' && el.matches(':disabled');
}

/** A field's value as the agent reads it (a password's as dots); a widget's `aria-valuenow`; null for neither. */
export function valueOf(el: Element): string | null {
  // A field the worker put a secret into reads as its placeholder, whatever it holds now.
  const secret = secretShown(el);
  if (secret !== undefined) return secret;
  if (isSelect(el)) {
    const chosen = Array.from(el.selectedOptions).map((o) => squash(o.label || o.textContent));
    return chosen.join(', ');
  }
  if (isInput(el) && inputType(el) === 'password') return el.value ? '\u2022\u2022\u2022\u2022' : '';
  if (isInput(el) || el.localName === 'textarea') return (el as HTMLInputElement | HTMLTextAreaElement).value;
  if (editableRegion(el)) return multiline((el as HTMLElement).innerText);
  const now = el.getAttribute('aria-valuenow');
  return now == null ? null : now;
}

/**
 * The root of a contenteditable region (an editor, a block of a block editor): it is read with a
 * reference and its text as its value, whatever role it has (`textbox`, `document`, none).
 */
export function editableRegion(el: Element): boolean {
  return editable(el) && !editable(el.parentElement);
}

/**
 * Elements whose name or description the browser may give otherwise than name() does: named or
 * described by other elements, titled, holding visually-hidden text, custom elements (whose
 * role may come from their internals), file inputs. The first max of them, in document order.
 */
export function axWanted(max: number): Element[] {
  const out: Element[] = [];
  const hiddenText = (el: Element) => {
    const all = el.querySelectorAll('*');
    for (let i = 0; i < all.length && i < 60; i++) {
      const e = all[i]!;
      if ((e.textContent || '').trim() && visibility(e) === 'gone' && e.getAttribute('aria-hidden') !== 'true' && getComputedStyle(e).display !== 'none') return true;
    }
    return false;
  };
  const visit = (node: Node) => {
    if (out.length >= max || (node.nodeType !== 1 && node.nodeType !== 11)) return;
    if (isElement(node)) {
      if (visibility(node) === 'gone') return;
      const custom = node.localName.includes('-') && !node.hasAttribute('role');
      // A file input is named by its button's text (Chromium's "Choose File(s)", in its own language) when no label names it.
      const file = isInput(node) && inputType(node) === 'file';
      if (custom || file || node.hasAttribute('aria-labelledby') || node.hasAttribute('aria-describedby') || node.hasAttribute('title')
        || (NAME_FROM_CONTENT.has(role(node) ?? '') && hiddenText(node))) out.push(node);
    }
    for (const c of children(node)) if (!(isElement(c) && c.ownerDocument !== document)) visit(c);
  };
  visit(document.documentElement);
  return out;
}
