/**
 * The structure of a tab with its frames of other sites (docs/action-spaces.md#frames). A frame
 * of the page's own origin is read by the page's script directly (structure-elements.ts walks
 * into its document); a frame of another site that the allow-list permits is out of the
 * page's script's reach (the browser keeps origins apart, and with site isolation runs the
 * frame in a process of its own). Each such frame
 * gets a structure of its own (page-structure.ts: an isolated world in the frame's document,
 * through the page's CDP session when Chromium keeps the frame in the page's process, through a
 * session attached to the frame when it runs in one of its own), and this module joins them
 * into one tab:
 *
 * - read_page: a frame's lines go under its `iframe` line, indented as its children;
 * - find: the candidates of every document are ranked together;
 * - references: one sequence for the tab (the ref book); each number remembers the document
 *   that gave it, and an action on it goes to that document. A reference stays the same while
 *   its element lives, as on the top page;
 * - clicks: the point inside the frame is moved by the frame's place in each document around
 *   it (brought into view there first), and must reach the frame there (not a cover over it).
 *
 * Confinement is unchanged: a frame outside the allow-list never commits a document (the
 * request is refused), so it shows no http(s) document and is not read.
 */
import type { CDPSession, Frame, Page } from 'playwright-core';
import { createDocumentStructure, findFrame, newRefBook, staleRefError, type DocumentStructure, type FrameTree, type PageStructure } from './page-structure.js';
import type { FoundElement, PageRead, PageReadOptions, Point, StructureResult } from './types.js';

/** Frames of other sites inside frames of other sites are followed this deep. */
const NESTING_MAX = 3;

interface Link {
  parent: DocumentStructure;
  hostRef: string;
}

export function createPageStructure(page: Page, client: () => Promise<CDPSession>): PageStructure {
  const book = newRefBook();
  const top = createDocumentStructure(client, book);
  const sessions = new WeakMap<Frame, { url: string; attached: Promise<{ session: CDPSession; frameId: string } | null> }>();
  const readers = new Map<string, { session: CDPSession; reader: DocumentStructure }>();
  const links = new Map<DocumentStructure, Link>();

  /**
   * The session that reaches the frame with this id when it shows an http(s) document: its own
   * when it runs in a process of its own (site isolation), else the page's (the frame is then
   * addressed by its id in the page's tree).
   */
  const sessionOf = async (frameId: string): Promise<CDPSession | null> => {
    const shows = (frame: FrameTree['frame'] | undefined) => !!frame && !frame.unreachableUrl && /^https?:/i.test(frame.url);
    const own = await client();
    const { frameTree } = (await own.send('Page.getFrameTree')) as { frameTree: FrameTree };
    const inPage = findFrame(frameTree, frameId);
    if (inPage) return shows(inPage) ? own : null;
    for (const frame of page.frames()) {
      if (frame === page.mainFrame() || !/^https?:/i.test(frame.url())) continue;
      let known = sessions.get(frame);
      if (!known || known.url !== frame.url()) {
        // A frame of the page's own process has no session of its own: newCDPSession refuses it.
        const attached = page
          .context()
          .newCDPSession(frame)
          .then(async (session) => {
            const { frameTree: tree } = (await session.send('Page.getFrameTree')) as { frameTree: FrameTree };
            return shows(tree.frame) ? { session, frameId: tree.frame.id } : null;
          })
          .catch(() => null);
        known = { url: frame.url(), attached };
        sessions.set(frame, known);
      }
      const got = await known.attached;
      if (got?.frameId === frameId) return got.session;
    }
    return null;
  };

  /** The structure of the document a frame element of `parent` shows, when it is a frame of another site. */
  const childOf = async (parent: DocumentStructure, hostRef: string): Promise<DocumentStructure | null> => {
    // A frame element gone since the read shows nothing to read inside.
    const frameId = await parent.frameIdOf(hostRef).catch(() => null);
    if (!frameId) return null;
    const session = await sessionOf(frameId);
    if (!session) return null;
    let known = readers.get(frameId);
    if (known?.session !== session) {
      known = { session, reader: createDocumentStructure(() => Promise.resolve(session), book, frameId) };
      readers.set(frameId, known);
    }
    links.set(known.reader, { parent, hostRef });
    return known.reader;
  };

  /** The document that gave a reference (the top page's for one it does not know: it gives the error). */
  const ownerOf = (ref: string): DocumentStructure => {
    const n = /^ref_(\d+)$/.exec(ref.trim())?.[1];
    return (n === undefined ? undefined : book.issued.get(Number(n))?.owner) ?? top;
  };

  /** Runs an action on the referenced element in its own document; a frame gone since is a stale reference. */
  const routed = async <T>(ref: string, run: (owner: DocumentStructure) => Promise<T>, gone: T): Promise<T> => {
    const owner = ownerOf(ref);
    if (owner === top) return run(top);
    return run(owner).catch(() => gone);
  };
  const goneResult = (ref: string) => ({ ok: false as const, error: staleRefError(ref, 'navigated') });

  const readTree = async (reader: DocumentStructure, options: PageReadOptions, budget: number, nesting: number): Promise<StructureResult<PageRead>> => {
    const read = await reader.readTree({ ...options, maxChars: budget });
    if (!read.ok) return read;
    const { lines, frames } = read.value;
    let { omitted, deeper } = read.value;
    let used = lines.reduce((n, line) => n + line.length + 1, 0);
    const inserts: Array<{ at: number; lines: string[] }> = [];
    for (const spot of nesting < NESTING_MAX ? frames : []) {
      const child = await childOf(reader, spot.ref);
      // A frame whose document went away mid-read is left out; the page around it reads the same.
      const sub = child ? await readTree(child, { ...options, ref: undefined }, Math.max(0, budget - used), nesting + 1).catch(() => null) : null;
      if (!sub?.ok) continue;
      const pad = options.filter === 'interactive' ? '' : '  '.repeat(spot.depth);
      const added = sub.value.lines.map((line) => pad + line);
      inserts.push({ at: spot.at, lines: added });
      used += added.reduce((n, line) => n + line.length + 1, 0);
      omitted += sub.value.omitted;
      deeper += sub.value.deeper;
    }
    for (const insert of inserts.reverse()) lines.splice(insert.at, 0, ...insert.lines);
    return { ok: true, value: { lines, omitted, deeper } };
  };

  /** Every document of the tab find looks into: the top page's, then its frames of other sites. */
  const documents = async (): Promise<DocumentStructure[]> => {
    const out: DocumentStructure[] = [top];
    for (let i = 0, level = new Map([[top, 0]]); i < out.length; i++) {
      const reader = out[i]!;
      const depth = level.get(reader) ?? 0;
      if (depth >= NESTING_MAX) continue;
      const hosts = await reader.frameHosts().catch(() => []);
      for (const ref of hosts) {
        const child = await childOf(reader, ref);
        if (child && !out.includes(child)) {
          out.push(child);
          level.set(child, depth + 1);
        }
      }
    }
    return out;
  };

  /** The document whose element has the focus, and that element: in a frame of another site when the page's focus is on its frame. */
  const focusedIn = async (): Promise<{ doc: DocumentStructure; focus: Awaited<ReturnType<PageStructure['focused']>> }> => {
    const mine = await top.focused();
    if (mine?.identity.role !== 'iframe') return { doc: top, focus: mine };
    for (const doc of (await documents()).slice(1)) {
      // A frame's document that went away holds no focus.
      const inside = await doc.focused().catch(() => null);
      if (inside) return { doc, focus: inside };
    }
    return { doc: top, focus: mine };
  };

  /** A point of a frame's viewport in the top page's: through the place of each frame around it. */
  const toTop = async (reader: DocumentStructure, ref: string, point: Point): Promise<StructureResult<Point>> => {
    let at = point;
    for (let link = links.get(reader); link; link = links.get(link.parent)) {
      const box = await link.parent.frameBox(link.hostRef);
      if (!box.ok) return { ok: false, error: `${ref} is inside a frame that ${box.error.replace(/^ref_\d+ /, '')}` };
      at = { x: Math.round(at.x + box.value.x), y: Math.round(at.y + box.value.y) };
      if (!(await link.parent.frameHit(link.hostRef, at))) return { ok: false, error: `${ref} is inside a frame that is covered by another element or out of view; scroll to it or close what covers it` };
    }
    return { ok: true, value: at };
  };

  return {
    async readPage(options) {
      if (options.ref !== undefined) return routed(options.ref, (owner) => readTree(owner, options, options.maxChars, 0), goneResult(options.ref));
      return readTree(top, options, options.maxChars, 0);
    },

    async find(rank, limit) {
      const docs = await documents();
      const pool: Array<{ doc: DocumentStructure; local: number }> = [];
      const all: FoundElement[] = [];
      for (const doc of docs) {
        const found = doc === top ? await doc.candidates() : await doc.candidates().catch(() => []);
        for (const c of found) {
          pool.push({ doc, local: c.i });
          all.push({ ...c, i: all.length });
        }
      }
      const chosen = rank(all).slice(0, limit);
      // Each document gives the lines of its chosen elements, in the ranked order.
      const queues = new Map<DocumentStructure, string[]>();
      for (const doc of docs) {
        const mine = chosen.filter((i) => pool[i]?.doc === doc).map((i) => pool[i]!.local);
        if (mine.length) queues.set(doc, await doc.lines(mine).catch(() => []));
      }
      return chosen.map((i) => (pool[i] ? queues.get(pool[i].doc)?.shift() : undefined)).filter((line): line is string => line !== undefined);
    },

    pageText: (maxChars) => top.pageText(maxChars),
    async contentDigest() {
      // Frames of other sites are looked for only when the top page holds some: a page without
      // them costs one call into it, as before.
      const mine = await top.documentDigest();
      if (mine.otherSites === 0) return mine.digest;
      const parts = [mine.digest];
      for (const doc of (await documents()).slice(1)) {
        // A frame whose document cannot be read now (gone mid-read) is marked as such: a change
        // from a read that could, while the rest of the tab is still compared.
        parts.push(await doc.documentDigest().then((d) => d.digest, () => 'gone'));
      }
      return parts.join('|');
    },

    pointOf: (ref) =>
      routed(
        ref,
        async (owner) => {
          const point = await owner.pointOf(ref);
          return point.ok && owner !== top ? toTop(owner, ref, point.value) : point;
        },
        goneResult(ref),
      ),
    setValue: (ref, value) => routed(ref, (owner) => owner.setValue(ref, value), goneResult(ref)),
    scrollTo: (ref) =>
      routed(
        ref,
        async (owner) => {
          const done = await owner.scrollTo(ref);
          const link = links.get(owner);
          if (done.ok && link) await link.parent.frameBox(link.hostRef);
          return done;
        },
        goneResult(ref),
      ),
    identify: (ref) => routed(ref, (owner) => owner.identify(ref), goneResult(ref)),
    identifyAt: (point) => top.identifyAt(point),
    locate: (identity) => top.locate(identity),
    focused: async () => (await focusedIn()).focus,
    focus: (ref) => routed(ref, (owner) => owner.focus(ref), goneResult(ref)),
    hideText: async (ref, shownAs) => (ref === null ? (await focusedIn()).doc.hideText(null, shownAs) : routed(ref, (owner) => owner.hideText(ref, shownAs), false)),
    mark: (ref, name, value) => routed(ref, (owner) => (owner === top ? top.mark(ref, name, value) : Promise.resolve(false)), false),
    widget: (ref) => routed(ref, (owner) => owner.widget(ref), goneResult(ref)),
    popupOptions: (ref) => routed(ref, (owner) => owner.popupOptions(ref), goneResult(ref)),
    calendar: () => top.calendar(),
    describe: (ref) => routed(ref, (owner) => owner.describe(ref), null),
  };
}
