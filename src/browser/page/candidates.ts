/**
 * Every element find() ranks and locate() compares, with its role, its name and where it is (the
 * heading it comes under, the region it sits in), in one walk of the document. A leaf: it reads
 * the page's semantics and writes no line.
 */
import { children, isContainer, isElement } from './dom.js';
import { editableRegion, INTERACTIVE, LANDMARKS, name, role, TEXTUAL, visibility } from './semantics.js';

/** Roles of the regions an element sits in, named in find's results. */
const REGIONS = new Set(['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'region', 'form', 'search', 'dialog', 'alertdialog', 'toolbar', 'tabpanel', 'group', 'menu']);

export interface Candidate {
  el: Element;
  role: string;
  name: string;
  heading: string;
  region: { role: string; name: string } | null;
}

/**
 * Everything find() and locate() compare: role, name, and where each element is (the heading
 * it comes under and the region it sits in, both tracked in the one walk of the document).
 */
export function candidates(): Candidate[] {
  const out: Candidate[] = [];
  let heading = '';
  const walk = (node: Node, region: Candidate['region']) => {
    if (!isContainer(node)) return;
    let inside = region;
    if (isElement(node)) {
      const tag = node.localName;
      if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'head') return;
      const vis = visibility(node);
      if (vis === 'gone') return;
      const r = vis === 'shown' ? role(node) : null;
      if (r && (INTERACTIVE.has(r) || LANDMARKS.has(r) || TEXTUAL.has(r) || editableRegion(node))) {
        const n = name(node, r);
        out.push({ el: node, role: r, name: n, heading, region });
        if (r === 'heading') heading = n;
      }
      if (r && REGIONS.has(r)) inside = { role: r, name: name(node, r) };
    }
    for (const c of children(node)) walk(c, inside);
  };
  walk(document.documentElement, null);
  return out;
}
