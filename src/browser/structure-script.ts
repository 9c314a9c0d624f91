import { ELEMENT_SEMANTICS } from './structure-elements.js';
import { PAGE_READS } from './structure-reads.js';
import { ACTION_TARGETS } from './structure-targets.js';
import { WIDGET_PARTS } from './structure-widgets.js';

/**
 * What the page's structure looks like to the agent: the source of a script that runs in an
 * isolated world of each document (page-structure.ts puts it there), so the page's own scripts
 * can neither see nor change it. It reads what the page renders (the DOM as laid out, with
 * computed visibility), never the raw source, so hidden text does not reach the model.
 *
 * It gives each element it reports a reference (`ref_N`) and keeps a weak map from reference to
 * element for this document only; the numbers come from the worker (`next`), which keeps one
 * sequence per tab, so a reference is never reused in a tab, even across documents.
 *
 * The script is assembled from four parts: what an element is (structure-elements.ts), refs
 * and reading (structure-reads.ts), the elements the agent acts on (structure-targets.ts), the
 * widgets form_input fills by hand (structure-widgets.ts); they
 * share one function scope. Source text, like the settle probe: a function serialised from
 * TypeScript would carry the loader's helpers (`__name`) into a page that does not have them.
 * No backticks in any part.
 */
export const STRUCTURE_KEY = '__executionWorkerStructure';

export const STRUCTURE_SCRIPT = `(() => {
  if (globalThis.${STRUCTURE_KEY}) return;
${ELEMENT_SEMANTICS}
${PAGE_READS}
${ACTION_TARGETS}
${WIDGET_PARTS}
  Object.defineProperty(globalThis, '${STRUCTURE_KEY}', {
    enumerable: false,
    value: {
      readPage,
      findCandidates,
      axDirty,
      annotate,
      axWanted,
      linesFor,
      frameHosts,
      frameBox: (ref) => { const el = lookup(ref); return el ? frameBox(el) : { ok: false, error: 'stale' }; },
      // Whether a point of this document's viewport reaches the frame (not a cover over it).
      frameHit: (ref, x, y) => { const el = lookup(ref); return !!el && hitAt(x, y) === el; },
      pageText,
      lookup,
      refOf: (el, next) => { const state = { next }; const ref = refOf(el, state); return { ref, next: state.next }; },
      point: (ref) => { const el = lookup(ref); return el ? pointOf(el) : { ok: false, error: 'stale' }; },
      identify: (ref) => { const el = lookup(ref); return el ? identity(el) : null; },
      identifyAt: (x, y) => { const el = elementAt(x, y); return el ? identity(el) : null; },
      locate,
      setValue: (ref, value) => { const el = lookup(ref); return el ? setValue(el, value) : { ok: false, error: 'stale' }; },
      scrollTo: (ref) => { const el = lookup(ref); if (!el) return { ok: false, error: 'stale' }; el.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' }); return { ok: true }; },
      focused,
      hideText: (ref) => hideText(ref === null ? deepActive() : lookup(ref)),
      // A short-lived attribute that lets the page's own world find the element (file uploads).
      mark: (ref, name, value) => { const el = lookup(ref); if (!el) return false; if (value === null) el.removeAttribute(name); else el.setAttribute(name, value); return true; },
      findText,
      readText,
      widget: (ref) => { const el = lookup(ref); return el ? widgetOf(el) : null; },
      popupOptions: (ref, next) => { const el = lookup(ref); const state = { next }; return el ? { options: popupOptions(el, state), next: state.next } : null; },
      calendar: (next) => { const state = { next }; const view = calendar(state); return { view, next: state.next }; },
      describe: (ref) => { const el = lookup(ref); if (!el) return null; const r = role(el); return { role: r || el.localName, name: name(el, r), tag: el.localName, type: el.localName === 'input' ? inputType(el) : undefined }; },
    },
  });
})();`;
