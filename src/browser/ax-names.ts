/**
 * Names, descriptions and roles from Chromium's own accessibility tree, handed to the page
 * structure script (page/ax-store.ts keeps them) so that read_page, find and the run cache speak the
 * browser's names: visually-hidden text, `aria-labelledby`, `aria-describedby` as description,
 * names from CSS-generated content. The script keeps what the tree does not give (visibility,
 * where to click, values) and its own name for elements the tree leaves unnamed.
 *
 * The script picks the elements whose name it may not compute as the browser does (named by
 * other elements, described, holding visually-hidden text, custom elements); the browser's node
 * of each is read (Accessibility.getPartialAXTree, by the element's handle in the worker's
 * isolated world) and the names are handed back in one call. The script keeps the names in a weak map and asks again only after the
 * document changed (a mutation observer of its own), so two reads of a still page cost one tree.
 * See docs/action-spaces.md#names.
 */
import type { CDPSession } from 'playwright-core';
import type { AxInfo } from './page/shapes.js';
import { AX_ANNOTATE_FUNCTION } from './page-scripts.generated.js';

interface AxValue {
  value?: unknown;
}

interface AxNode {
  ignored?: boolean;
  role?: AxValue;
  name?: AxValue;
  description?: AxValue;
}

/** Roles of text runs and the document itself: nothing the script reports as an element. */
const SKIPPED_ROLES = new Set(['StaticText', 'InlineTextBox', 'RootWebArea', 'LineBreak', 'none', 'presentation']);
/** Object group of the handles, released after each pass. */
const GROUP = 'execution-worker-ax';
/** A page with more such elements is annotated on its first ones (the rest keep the script's names). */
const MAX_NODES = 500;

const text = (v: AxValue | undefined): string => (typeof v?.value === 'string' ? v.value.replace(/\s+/g, ' ').trim() : '');

/**
 * Gives the script in `contextId` the tree's names for the elements whose name the script may not
 * compute as the browser does, when it says the document changed since the last pass
 * (`structureKey` is the script's global). A page whose tree cannot be read keeps the script's
 * own names: this never fails the read.
 */
export async function annotateFromAxTree(session: CDPSession, contextId: number, structureKey: string): Promise<void> {
  const dirty = (await session.send('Runtime.evaluate', { expression: `globalThis.${structureKey}.axDirty()`, contextId, returnByValue: true })) as { result?: { value?: unknown } };
  if (dirty.result?.value !== true) return;
  // The script picks them (aria-labelledby or -describedby, a title, visually-hidden text, a
  // custom element): on most pages a few. Reading the whole tree instead costs seconds on a long page.
  const list = (await session.send('Runtime.evaluate', { expression: `globalThis.${structureKey}.axWanted(${MAX_NODES})`, contextId, objectGroup: GROUP })) as {
    result?: { objectId?: string };
  };
  try {
    if (!list.result?.objectId) return;
    const { result: entries } = (await session.send('Runtime.getProperties', { objectId: list.result.objectId, ownProperties: true })) as {
      result: Array<{ name: string; value?: { objectId?: string } }>;
    };
    const handles = entries.filter((e) => /^\d+$/.test(e.name) && e.value?.objectId).map((e) => e.value!.objectId!);
    // Sent together: the session pipelines them.
    const found = await Promise.all(
      handles.map((objectId) =>
        session
          .send('Accessibility.getPartialAXTree', { objectId, fetchRelatives: false })
          .then((r) => (r as { nodes: AxNode[] }).nodes.find((n) => !n.ignored))
          // A node gone mid-read keeps the name the page script gave it.
          .catch(() => undefined),
      ),
    );
    const infos: AxInfo[] = [];
    const args: Array<{ objectId: string }> = [];
    found.forEach((node, i) => {
      if (!node || SKIPPED_ROLES.has(text(node.role))) return;
      infos.push({ role: text(node.role), name: text(node.name), description: text(node.description) });
      args.push({ objectId: handles[i]! });
    });
    if (args.length === 0) return;
    await session.send('Runtime.callFunctionOn', {
      functionDeclaration: AX_ANNOTATE_FUNCTION,
      executionContextId: contextId,
      arguments: [{ value: infos }, ...args],
    });
  } finally {
    // A document gone took its objects with it.
    await session.send('Runtime.releaseObjectGroup', { objectGroup: GROUP }).catch(() => undefined);
  }
}
