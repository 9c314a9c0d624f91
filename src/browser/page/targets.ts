/**
 * The elements the agent acts on: where to click one (a point that reaches it, not a cover over
 * it), which one is under a point, its identity across page loads (the run cache's) and how to
 * find it again.
 */
import { deepActive, inputType, inViewport, isInput, parentOf, rectOf } from './dom.js';
import { candidates } from './candidates.js';
import { hitAt } from './hit.js';
import { refOf, type RefState } from './refs.js';
import type { ElementIdentity, Point, Refusal } from './shapes.js';
import { editableRegion, INTERACTIVE, isDisabled, name, role, visibility } from './semantics.js';
import { quote, squash } from './text.js';

/** Where to click an element: scrolled into view, a point that reaches it (not a cover over it). */
export function pointOf(el: Element, scrolled = false): ({ ok: true } & Point) | Refusal {
  if (visibility(el) === 'gone') return { ok: false, error: 'hidden' };
  let r = rectOf(el);
  const fully = r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
  if (!fully && !scrolled) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    r = rectOf(el);
    scrolled = true;
  }
  if (r.width < 1 || r.height < 1) return { ok: false, error: 'hidden' };
  const spots = [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75], [0.1, 0.5]] as const;
  let cover: Element | null = null;
  for (const [fx, fy] of spots) {
    const x = Math.round(r.left + r.width * fx);
    const y = Math.round(r.top + r.height * fy);
    if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
    const hit = hitAt(x, y);
    if (hit && (hit === el || el.contains(hit) || (hit.localName === 'label' && (hit as HTMLLabelElement).control === el) || (el.shadowRoot && el.shadowRoot.contains(hit)))) return { ok: true, x, y };
    if (hit && !cover) cover = hit;
  }
  // In view of the window but clipped by a scrolling box (a pop-up list's lower options): scrolled within it, once.
  if (!scrolled) {
    el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    return pointOf(el, true);
  }
  if (cover) {
    const cr = role(cover);
    return { ok: false, error: 'covered', by: (cr || cover.localName) + (name(cover, cr) ? ' ' + quote(name(cover, cr)) : '') };
  }
  return { ok: false, error: 'offscreen' };
}

/** The element under a viewport point: the nearest one with a role the agent would target. */
export function elementAt(x: number, y: number): Element | null {
  let el = hitAt(x, y);
  while (el) {
    const r = visibility(el) === 'shown' ? role(el) : null;
    if (r && (INTERACTIVE.has(r) || editableRegion(el) || r === 'heading' || r === 'img' || r === 'cell' || r === 'listitem' || r === 'paragraph')) return el;
    el = parentOf(el);
  }
  return null;
}

/** What identifies an element across page loads: role and name first, attributes and position to break ties. */
export function identity(el: Element): ElementIdentity {
  const r = role(el) || el.localName;
  return {
    role: r,
    name: name(el, r),
    tag: el.localName,
    type: isInput(el) ? inputType(el) : undefined,
    id: el.id && !/\d{3,}|[:]/.test(el.id) ? el.id : undefined,
    nameAttr: el.getAttribute('name') || undefined,
    testId: el.getAttribute('data-testid') || el.getAttribute('data-test') || undefined,
    href: el.localName === 'a' ? el.getAttribute('href') || undefined : undefined,
    path: pathOf(el),
  };
}

function pathOf(el: Element): string {
  const steps: string[] = [];
  let node: Element | null = el;
  while (node && node.nodeType === 1 && node !== document.documentElement && steps.length < 12) {
    const tag = node.localName;
    const parent: Element | null = node.parentElement;
    if (!parent) break;
    const same = Array.from(parent.children).filter((c) => c.localName === tag);
    steps.unshift(same.length > 1 ? tag + ':nth-of-type(' + (same.indexOf(node) + 1) + ')' : tag);
    node = parent;
  }
  return steps.join('>');
}

export type Located = { ok: true; ref: string; next: number; enabled: boolean; inView: boolean } | { ok: false; error: 'missing' } | { ok: false; error: 'ambiguous'; count: number };

/** The one element matching an identity: same role and name; ties broken by attributes, then position. */
export function locate(want: ElementIdentity, next: number): Located {
  const norm = (s: string) => squash(s).toLowerCase();
  const matches = candidates().filter((c) => c.role === want.role && norm(c.name) === norm(want.name) && (want.type === undefined || want.type === (isInput(c.el) ? inputType(c.el) : undefined)));
  if (matches.length === 0) return { ok: false, error: 'missing' };
  const score = (el: Element) => {
    const id = identity(el);
    return (want.testId && id.testId === want.testId ? 8 : 0) + (want.id && id.id === want.id ? 4 : 0) + (want.nameAttr && id.nameAttr === want.nameAttr ? 4 : 0) + (want.href && id.href === want.href ? 2 : 0) + (id.path === want.path ? 1 : 0);
  };
  const scored = matches.map((c) => ({ c, s: score(c.el) })).sort((a, b) => b.s - a.s);
  const [best, second] = scored;
  if (!best) return { ok: false, error: 'missing' };
  if (second && best.s === second.s) return { ok: false, error: 'ambiguous', count: scored.length };
  const el = best.c.el;
  const state: RefState = { next, focused: deepActive() };
  return { ok: true, ref: refOf(el, state), next: state.next, enabled: !isDisabled(el), inView: inViewport(el) };
}
