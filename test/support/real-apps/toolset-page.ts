import type { CDPSession } from 'playwright-core';
import type { PlaywrightTab } from '../../../src/browser/playwright-tab.js';
import type { BrowserSandbox, BrowserSession } from '../../../src/browser/types.js';
import { createSecretVault } from '../../../src/domain/secrets.js';
import { createActionSpace } from '../../../src/toolset/create.js';
import type { ActionReport } from '../../../src/toolset/types.js';
import { resultText } from '../widget-tasks.js';
import { parseRead, type PageElement } from './page-read.js';

/**
 * The browser toolset on a page of a real application, called member by member as an agent would
 * (no model, no run): for tests of what the toolset reads and does on software nobody here wrote.
 * `chromiumNames` asks Chromium's own accessibility tree, to compare the toolset's names with it.
 */
export interface ToolsetPage {
  session: BrowserSession;
  call(member: string, input?: Record<string, unknown>): Promise<ActionReport & { text: string }>;
  /** `read_page` with `filter: "all"`, parsed. */
  readAll(): Promise<PageElement[]>;
  /** The one element a read lists with this role and name (exact), or a clear error. */
  element(role: string, name: string | RegExp): Promise<PageElement>;
  /**
   * The roles and names Chromium's accessibility tree gives the page's elements (ignored nodes
   * left out, and the parts a native date or time field draws inside itself: its spin buttons
   * and picker button are not elements of the page).
   */
  chromiumNames(): Promise<Array<{ role: string; name: string }>>;
  close(): Promise<void>;
}

interface AxNode {
  nodeId: string;
  parentId?: string;
  ignored: boolean;
  role?: { value?: string };
  name?: { value?: string };
}

/** Chromium's roles for the native date and time fields. */
const NATIVE_FIELDS = new Set(['Date', 'DateTime', 'InputTime']);

export async function openToolsetPage(sandbox: BrowserSandbox, url: string, allowedDomains: readonly string[]): Promise<ToolsetPage> {
  const signal = new AbortController().signal;
  const session = await sandbox.openSession({ executionId: 'real-app', viewport: { width: 1280, height: 800 }, allowedDomains, onBlocked: () => {} }, signal);
  const space = createActionSpace(
    { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
    { session, secrets: createSecretVault({}, undefined), allowJavascript: false },
  );
  const opened = await session.navigate(url, signal);
  if (!opened.ok) throw new Error(`could not open ${url}: ${opened.error}`);
  await session.settle(signal);
  let n = 0;
  let cdp: CDPSession | undefined;
  const call: ToolsetPage['call'] = async (member, input = {}) => {
    const report = await space.run({ type: 'tool_use', id: `toolu_${++n}`, name: member, input, toolset_name: 'browser' }, { signal });
    return { ...report, text: resultText(report.result) };
  };
  const readAll = async () => parseRead((await call('read_page', { filter: 'all' })).text);
  return {
    session,
    call,
    readAll,
    async element(role, name) {
      const page = await readAll();
      const found = page.filter((e) => e.role === role && e.ref && (typeof name === 'string' ? e.name === name : name.test(e.name)));
      if (found.length !== 1) throw new Error(`${found.length} elements ${role} ${String(name)} on the page:\n${page.map((e) => e.line).join('\n').slice(0, 3000)}`);
      return found[0]!;
    },
    async chromiumNames() {
      const page = (session.tab() as PlaywrightTab).page;
      cdp ??= await page.context().newCDPSession(page);
      const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: AxNode[] };
      const byId = new Map(nodes.map((node) => [node.nodeId, node]));
      const insideField = (node: AxNode): boolean => {
        for (let up = node.parentId ? byId.get(node.parentId) : undefined; up; up = up.parentId ? byId.get(up.parentId) : undefined) {
          if (NATIVE_FIELDS.has(String(up.role?.value))) return true;
        }
        return false;
      };
      return nodes.filter((node) => !node.ignored && !insideField(node)).map((node) => ({ role: String(node.role?.value ?? ''), name: String(node.name?.value ?? '') }));
    },
    close: () => session.close(),
  };
}
