/**
 * read_page in one document: the elements it renders as an indented tree (or a flat list of
 * those one acts on), grown until the character budget; what did not fit is counted. Frames
 * of another site are marked where their lines go (the worker reads them in their own document).
 */
import { children, deepActive, frameDoc, inViewport, isContainer, isElement, isFrame, isSelect, isText, rectOf } from './dom.js';
import { isModal, openDialogs } from './dialogs.js';
import { line } from './element-line.js';
import { lookup, refOf, type RefState } from './refs.js';
import type { Point, ReadOptions, Refusal, TreeRead } from './shapes.js';
import { CONTROLS, editableRegion, INTERACTIVE, LANDMARKS, NAME_FROM_CONTENT, name, role, shownText, STRUCTURED, TEXTUAL, visibility } from './semantics.js';
import { cut, NAME_MAX, OPTIONS_MAX, quote, squash, TEXT_MAX } from './text.js';

/**
 * read_page. filter: undefined (visible elements in the viewport), 'interactive' (interactive
 * elements in the viewport, flat) or 'all' (also those outside the viewport). The text grows
 * until maxChars; what did not fit is counted.
 */
export function readPage(opts: ReadOptions): TreeRead | { ok: false; error: 'stale' } {
  const state: RefState = { next: opts.next, focused: deepActive() };
  const filter = opts.filter || 'visible';
  // Frames of another site whose content this document cannot read: where their lines go (the worker reads them).
  const frames: TreeRead['frames'] = [];
  const spot = (node: Element, depth: number) => {
    if (otherSite(node)) frames.push({ ref: refOf(node, state), at: lines.length, depth });
  };
  const maxDepth = Math.max(1, opts.depth || 15);
  const lines: string[] = [];
  let used = 0;
  let omitted = 0;
  let deeper = 0;
  const push = (text: string) => {
    if (used + text.length + 1 > opts.maxChars) {
      omitted++;
      return;
    }
    lines.push(text);
    used += text.length + 1;
  };
  const inView = (el: Element) => filter === 'all' || opts.wholePage || inViewport(el);

  // The interactive list is flat; what an open dialog holds is indented under it.
  let flat = 0;
  const pad = (depth: number) => '  '.repeat(filter === 'interactive' ? flat : depth);
  /** Open dialogs already read (first): not read again where they sit. */
  const readFirst = new Set<Element>();
  const visit = (node: Node, depth: number, parentTextual: boolean): void => {
    if (isText(node)) {
      if (filter === 'interactive' || parentTextual) return;
      const t = squash(node.data);
      const host = node.parentElement;
      if (t && host && inView(host) && visibility(host) === 'shown') push(pad(depth) + 'text ' + quote(cut(t, TEXT_MAX)));
      return;
    }
    if (!isContainer(node)) return;
    if (isElement(node)) {
      const tag = node.localName;
      if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'noscript' || tag === 'head' || readFirst.has(node)) return;
      const vis = visibility(node);
      if (vis === 'gone') return;
      // A label whose control is on the page names that control: its text would only repeat.
      if (tag === 'label' && (node as HTMLLabelElement).control) {
        for (const c of children(node)) visit(c, depth, true);
        return;
      }
      const r = vis === 'shown' ? role(node) : null;
      let report = false;
      // A contenteditable region (an editor, a block of a block editor) is a field, whatever its role.
      const region = r !== null && editableRegion(node);
      if (r && inView(node)) {
        if (filter === 'interactive') report = INTERACTIVE.has(r) || region;
        else report = INTERACTIVE.has(r) || LANDMARKS.has(r) || TEXTUAL.has(r) || NAME_FROM_CONTENT.has(r) || region;
      }
      if (r && report) {
        if (depth >= maxDepth) {
          deeper++;
          return;
        }
        let n: string;
        let textual: boolean;
        if (region) {
          // Its text is its value: not repeated as text lines below it.
          n = name(node, r);
          textual = true;
        } else if (TEXTUAL.has(r)) {
          const plain = !node.querySelector(CONTROLS);
          n = plain ? cut(shownText(node), TEXT_MAX) : '';
          textual = plain;
        } else {
          n = name(node, r);
          textual = NAME_FROM_CONTENT.has(r) && !!n;
        }
        push(pad(depth) + line(node, r, state, n));
        if (isSelect(node)) {
          const options = Array.from(node.options);
          const optionPad = filter === 'interactive' ? pad(0) + '  ' : pad(depth + 1);
          options.slice(0, optionsMax).forEach((o) => {
            const label = squash(o.label || o.textContent);
            push(optionPad + 'option ' + quote(cut(label, NAME_MAX)) + (o.value !== label ? ' value=' + quote(cut(o.value, NAME_MAX)) : '') + (o.selected ? ' selected' : '') + (o.disabled ? ' disabled' : ''));
          });
          if (options.length > optionsMax) push(optionPad + '(' + (options.length - optionsMax) + ' more options' + (optionsMax < OPTIONS_MAX ? ': read_page with ' + refOf(node, state) + ' lists them' : '') + ')');
          return;
        }
        spot(node, depth + 1);
        for (const c of children(node)) visit(c, depth + 1, parentTextual || textual);
        return;
      }
      // Inline text with nothing reportable inside (a div of words and <b>s): one text line, not a word per line.
      if (vis === 'shown' && filter !== 'interactive' && !parentTextual && inView(node) && !node.shadowRoot
          && Array.from(node.childNodes).some((c) => isText(c) && c.data.trim()) && !node.querySelector(STRUCTURED)) {
        const t = shownText(node);
        if (t) push(pad(depth) + 'text ' + quote(cut(t, TEXT_MAX)));
        return;
      }
      if (vis === 'shown' && inView(node)) spot(node, depth);
    }
    for (const c of children(node)) visit(c, depth, parentTextual);
  };

  const optionsMax = Math.min(OPTIONS_MAX, opts.optionsMax ?? OPTIONS_MAX);
  const root = document.body || document.documentElement;
  if (!opts.ref) {
    // Open dialogs first, each saying it is open (and modal when it covers the page).
    const dialogs = openDialogs().filter(inView);
    for (const dialog of dialogs) {
      const r = role(dialog) ?? 'dialog';
      if (filter === 'interactive') {
        push(line(dialog, r, state, name(dialog, r)));
        flat = 1;
        for (const c of children(dialog)) visit(c, 1, false);
        flat = 0;
      } else visit(dialog, 0, false);
    }
    // Then the rest of the page, without them.
    for (const dialog of dialogs) readFirst.add(dialog);
    if (dialogs.some(isModal)) push('(the page behind the modal dialog: close the dialog to act on it)');
  }
  if (opts.ref) {
    const el = lookup(opts.ref);
    if (!el) return { ok: false, error: 'stale' };
    const r = role(el);
    if (r) {
      push(line(el, r, state, name(el, r)));
      spot(el, 1);
      for (const c of children(el)) visit(c, 1, NAME_FROM_CONTENT.has(r));
    } else visit(el, 0, false);
  } else if (root) visit(root, 0, false);
  return { ok: true, lines, omitted, deeper, frames, next: state.next };
}

/** A frame whose document is of another site (the worker reads its content in that document). */
export function otherSite(el: Element): boolean {
  return isFrame(el) && !frameDoc(el);
}

/** References of the shown frames of another site, wherever they are in this document (find reads into them). */
export function frameHosts(next: number): { refs: string[]; next: number } {
  const state: RefState = { next };
  const refs: string[] = [];
  // Styles are computed for frames only (a long page is walked on every find): checkVisibility
  // sees a hidden ancestor, and an aria-hidden or inert one is looked up.
  const walk = (node: Node) => {
    if (!isContainer(node)) return;
    if (isElement(node) && otherSite(node)) {
      if (visibility(node) === 'shown' && !node.closest('[aria-hidden=true], [inert]')) refs.push(refOf(node, state));
      return;
    }
    for (const c of children(node)) walk(c);
  };
  walk(document.documentElement);
  return { refs, next: state.next };
}

/**
 * Where a frame's content starts in this document's viewport (the frame brought into view
 * first), for a point inside it to be clicked from the top page.
 */
export function frameBox(el: Element): ({ ok: true } & Point) | Refusal {
  if (visibility(el) !== 'shown') return { ok: false, error: 'hidden' };
  let r = rectOf(el);
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) {
    el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    r = rectOf(el);
  }
  const s = getComputedStyle(el);
  return { ok: true, x: r.left + el.clientLeft + (parseFloat(s.paddingLeft) || 0), y: r.top + el.clientTop + (parseFloat(s.paddingTop) || 0) };
}
