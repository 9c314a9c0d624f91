/**
 * The tabs of one session (playwright-session.ts): which pages of the context are tabs, which
 * one the agent acts on, and what happened to them between two reports to the agent (tabs the
 * pages opened, navigations refused, dialogs dismissed, downloads).
 */
import type { BrowserContext, Dialog, Page } from 'playwright-core';
import type { SessionGuard } from './confinement.js';
import type { FileChooserTracker } from './file-chooser.js';
import type { FrameNavigations } from './frame-navigations.js';
import type { NetworkActivity } from './network-activity.js';
import type { ConsoleBudget } from './page-limits.js';
import { createPlaywrightTab, type PlaywrightTab } from './playwright-tab.js';
import type { BrowserChange, LimitReached, PageLimits } from './types.js';

/** Changes kept for the agent between two reports (a page opening dialogs in a loop). */
const CHANGES_MAX = 100;

export interface TabRegistryParts {
  context: BrowserContext;
  guard: SessionGuard;
  files: FileChooserTracker;
  network: NetworkActivity;
  frameNavigations: FrameNavigations;
  /** The active tab's page crashed. */
  onCrash: (error: Error) => void;
  /** The session is closing: pages that appear now are not tabs. */
  closing: () => boolean;
  /**
   * The session's limits (docs/security.md#limits). `tabsMax` (BROWSER_TABS_MAX): pages open at
   * once, tabs and popups still loading alike; a popup past it is closed as it appears and the
   * agent reads why. Each page is a renderer of its own: 60 popups of 5,000 elements took one
   * execution's Chromium to 3.7 GB.
   */
  limits: PageLimits;
  /** The console bytes every tab of the session shares. */
  consoleBudget: ConsoleBudget;
  /** A limit was reached (told once per limit and scope by the reporter). */
  reached: (scope: string, reached: LimitReached) => void;
}

export interface TabRegistry {
  /** Open tabs, oldest first. A popup joins once it shows an allowed document. */
  readonly open: readonly PlaywrightTab[];
  /** The tab the agent acts on; none once the browser has closed them all (it died). */
  active(): PlaywrightTab | undefined;
  /** The active tab, or an error when there is none. */
  requireActive(): PlaywrightTab;
  byId(id: string): PlaywrightTab | undefined;
  activate(tab: PlaywrightTab): void;
  /** Opens a page of the worker's own (new_tab) and makes it the active tab. */
  openOwn(): Promise<PlaywrightTab>;
  record(change: BrowserChange): void;
  drainChanges(): BrowserChange[];
  /** Main-frame navigations of any page so far; settling watches it change. */
  navigations(): number;
  /**
   * When a page the worker did not open last came to an outcome: it joined as a tab, closed
   * before joining (refused, or a download), or an existing tab took the navigation instead.
   */
  popupOutcomeAt(): number;
  /** Called after each popup outcome (wait-until.ts). */
  readonly popupWakers: Set<() => void>;
  /** Called when another tab becomes the active one; returns the unsubscribe. */
  onActiveChange(listener: () => void): () => void;
}

export function createTabRegistry(firstPage: Page, parts: TabRegistryParts): TabRegistry {
  const { context, guard, network, frameNavigations } = parts;
  const tabs: PlaywrightTab[] = [];
  const tabOf = new Map<Page, PlaywrightTab>();
  /** Tabs in the order they were last active: when the active one closes, the one before it takes over. */
  const activations: PlaywrightTab[] = [];
  const changes: BrowserChange[] = [];
  const activeListeners = new Set<() => void>();
  const popupWakers = new Set<() => void>();
  let nextTabNumber = 1;
  let navigations = 0;
  let popupOutcomeAt = 0;
  /** Pages the worker is about to open itself (new_tab): the context announces them like popups. */
  let ownPagesExpected = 0;

  const notify = (listeners: Set<() => void>) => [...listeners].forEach((fn) => fn());
  const popupOutcome = () => {
    popupOutcomeAt = Date.now();
    notify(popupWakers);
  };
  const active = (): PlaywrightTab | undefined => activations[activations.length - 1] ?? tabs[tabs.length - 1];
  const activate = (tab: PlaywrightTab) => {
    const at = activations.indexOf(tab);
    if (at === activations.length - 1 && at >= 0) return;
    if (at >= 0) activations.splice(at, 1);
    activations.push(tab);
    notify(activeListeners);
  };
  const record = (change: BrowserChange) => {
    changes.push(change);
    if (changes.length > CHANGES_MAX) changes.splice(0, changes.length - CHANGES_MAX);
  };

  /**
   * A page of the context becomes a tab. The worker's own pages (the first one, new_tab) are
   * tabs at once; a popup the page opened only once it has committed an allowed document: one
   * the confinement refuses is closed by it, and must never receive the agent's keystrokes in
   * the meantime. A popup that joins becomes the active tab, as a browser shows it.
   */
  const adopt = (page: Page, own: boolean): PlaywrightTab => {
    const tab = createPlaywrightTab(`tab_${nextTabNumber++}`, page, {
      setFilesOn: (element, names) => parts.files.setFilesOn(page, element, names),
      setFilesToChooser: (names) => (parts.files.pending(page) ? parts.files.setFiles(page, names, { kind: 'chooser' }) : undefined),
      console: { consoleLineMaxChars: parts.limits.consoleLineMaxChars, consoleEntriesMax: parts.limits.consoleEntriesMax, budget: parts.consoleBudget, reached: parts.reached },
    });
    tabOf.set(page, tab);
    if (own) guard.trustPage(page);
    const join = () => {
      if (tabs.includes(tab) || page.isClosed() || parts.closing()) return;
      tabs.push(tab);
      if (!own) record({ type: 'tab_opened', tabId: tab.id });
      activate(tab);
      if (!own) popupOutcome();
    };
    // Playwright may announce a popup after its first document already committed.
    if (own || /^https?:/i.test(page.url())) join();
    frameNavigations.follow(page);
    page.on('framenavigated', (frame) => {
      if (frame !== page.mainFrame()) return;
      navigations++;
      // A link aimed at a named window that is already open navigates that tab.
      if (tabs.includes(tab) && tab !== active()) popupOutcome();
      // Only allowed http(s) documents can commit (the proxy and the guard refuse the rest);
      // error pages and about:blank do not make a popup a tab.
      if (/^https?:/i.test(frame.url())) join();
    });
    page.on('crash', () => {
      if (tab === active()) parts.onCrash(new Error('the page crashed'));
    });
    page.on('dialog', (dialog: Dialog) => {
      // Nobody answers a dialog in an unattended run. Leaving a page is allowed; every other
      // dialog is dismissed, and the agent is told what it said.
      const kind = dialog.type();
      const leave = kind === 'beforeunload';
      // A dialog that cannot be answered was closed with its page.
      (leave ? dialog.accept() : dialog.dismiss()).catch(() => undefined);
      if (!leave) record({ type: 'dialog_dismissed', tabId: tab.id, kind, message: dialog.message() });
    });
    page.on('close', () => {
      if (!own && !tabs.includes(tab)) popupOutcome();
      const wasActive = tab === active();
      for (const list of [tabs, activations]) {
        const index = list.indexOf(tab);
        if (index >= 0) list.splice(index, 1);
      }
      tabOf.delete(page);
      tab.dispose();
      network.forget(page);
      if (wasActive) notify(activeListeners);
    });
    return tab;
  };

  adopt(firstPage, true);
  context.on('page', (page) => {
    if (parts.closing() || tabOf.has(page)) return;
    const own = ownPagesExpected > 0;
    if (own) ownPagesExpected--;
    const { tabsMax } = parts.limits;
    if (!own && tabOf.size >= tabsMax) {
      page.close().catch(() => undefined);
      const opener = active();
      const openPages = tabOf.size;
      // Told each time to the agent, once to the log.
      if (opener) record({ type: 'popup_closed', tabId: opener.id, url: page.url(), openPages, limit: 'BROWSER_TABS_MAX' });
      parts.reached('session', { limit: 'BROWSER_TABS_MAX', max: tabsMax, value: openPages + 1, unit: 'tabs', action: 'closed', detail: `a popup was closed: ${openPages} pages were open` });
      popupOutcome();
      return;
    }
    adopt(page, own);
  });
  guard.onRefusedNavigation((page, url) => {
    const tab = tabOf.get(page);
    if (tab) record({ type: 'navigation_refused', tabId: tab.id, url });
  });

  return {
    open: tabs,
    active,
    requireActive() {
      const tab = active();
      if (!tab) throw new Error('the browser has no open tab');
      return tab;
    },
    byId: (id) => tabs.find((tab) => tab.id === id),
    activate,
    async openOwn() {
      // The context announces the page (and the handler counts it as ours) before newPage()
      // resolves. If it fails, nothing was announced: a later popup must not pass as ours.
      ownPagesExpected++;
      let page: Page;
      try {
        page = await context.newPage();
      } catch (error) {
        ownPagesExpected = Math.max(0, ownPagesExpected - 1);
        throw error;
      }
      const tab = tabOf.get(page) ?? adopt(page, true);
      activate(tab);
      return tab;
    },
    record,
    drainChanges: () => changes.splice(0),
    navigations: () => navigations,
    popupOutcomeAt: () => popupOutcomeAt,
    popupWakers,
    onActiveChange(listener) {
      activeListeners.add(listener);
      return () => activeListeners.delete(listener);
    },
  };
}
