/**
 * Names, descriptions and roles from Chromium's own accessibility tree, handed to the page
 * structure script (structure-script.ts) so that read_page, find and the run cache speak the
 * browser's names: visually-hidden text, `aria-labelledby`, `aria-describedby` as description,
 * names from CSS-generated content. The script keeps what the tree does not give (visibility,
 * where to click, values) and its own name for elements the tree leaves unnamed.
 *
 * The tree's nodes are tied to the script's elements by their backend node id: each named node
 * is resolved into the worker's isolated world (DOM.resolveNode) and the handles are passed to
 * the script in one call. The script keeps the names in a weak map and asks again only after the
 * document changed (a mutation observer of its own), so two reads of a still page cost one tree.
 * See docs/action-spaces.md#names.
 */
import type { CDPSession } from 'playwright-core';

interface AxValue {
  value?: unknown;
}

interface AxNode {
  ignored?: boolean;
  role?: AxValue;
  name?: AxValue;
  description?: AxValue;
  backendDOMNodeId?: number;
}

/** One element's names as the script takes them. */
export interface AxInfo {
  role: string;
  name: string;
  description: string;
}

/** Roles of text runs and the document itself: nothing the script reports as an element. */
const SKIPPED_ROLES = new Set(['StaticText', 'InlineTextBox', 'RootWebArea', 'LineBreak', 'none', 'presentation']);
/** Object group of the handles, released after each pass. */
const GROUP = 'execution-worker-ax';
/** A page with more named nodes is annotated on its first ones (the rest keep the script's names). */
const MAX_NODES = 4_000;

const text = (v: AxValue | undefined): string => (typeof v?.value === 'string' ? v.value.replace(/\s+/g, ' ').trim() : '');

/**
 * Gives the script in `contextId` the tree's names for the elements of the document, when it
 * says the document changed since the last pass (`structureKey` is the script's global). A page
 * whose tree cannot be read keeps the script's own names: this never fails the read.
 */
export async function annotateFromAxTree(session: CDPSession, contextId: number, structureKey: string): Promise<void> {
  const dirty = (await session.send('Runtime.evaluate', { expression: `globalThis.${structureKey}.axDirty()`, contextId, returnByValue: true })) as { result?: { value?: unknown } };
  if (dirty.result?.value !== true) return;
  const { nodes } = (await session.send('Accessibility.getFullAXTree', {}).catch(() => ({ nodes: [] }))) as { nodes: AxNode[] };
  const named = nodes.filter((n) => !n.ignored && n.backendDOMNodeId !== undefined && !SKIPPED_ROLES.has(text(n.role)) && (text(n.name) || text(n.description))).slice(0, MAX_NODES);
  try {
    // Sent together: the session pipelines them, so a page of a thousand names costs one round of replies.
    const handles = await Promise.all(
      named.map((n) =>
        session
          .send('DOM.resolveNode', { backendNodeId: n.backendDOMNodeId!, executionContextId: contextId, objectGroup: GROUP })
          .then((r) => (r as { object?: { objectId?: string } }).object?.objectId)
          .catch(() => undefined),
      ),
    );
    const infos: AxInfo[] = [];
    const args: Array<{ objectId: string }> = [];
    named.forEach((n, i) => {
      const objectId = handles[i];
      if (!objectId) return;
      infos.push({ role: text(n.role), name: text(n.name), description: text(n.description) });
      args.push({ objectId });
    });
    await session.send('Runtime.callFunctionOn', {
      functionDeclaration: `function (infos, ...elements) { globalThis.${structureKey}.annotate(infos, elements); }`,
      executionContextId: contextId,
      arguments: [{ value: infos }, ...args],
    });
  } finally {
    await session.send('Runtime.releaseObjectGroup', { objectGroup: GROUP }).catch(() => undefined);
  }
}
