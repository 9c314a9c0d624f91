/**
 * The Playwright guard of a session's context (confinement layer 3): what the egress proxy
 * cannot see or cannot stop. Every request of the context passes `context.route('**\/*')`
 * (including redirect hops, which Chromium re-issues as new requests), WebSockets of pages pass
 * `context.routeWebSocket`, and top-level navigations to non-network schemes (`data:`, `blob:`,
 * `file:`, `chrome:`) are undone. Popups whose navigation is refused are closed, downloads from
 * outside the allow-list are cancelled (the others go to `onDownload`), and a service worker that still appears is reported (the context is created with
 * `serviceWorkers: 'block'`, so none should).
 *
 * The guard is defence in depth, not the boundary: workers and anything Playwright does not
 * intercept still meet the proxy.
 */
import type { BrowserContext, Download, Frame, Page, Route, WebSocketRoute } from 'playwright-core';

import type { BlockedRequest } from './types.js';
import type { Logger } from '../telemetry/types.js';
import type { HostMatcher } from './host-matcher.js';

export interface RequestGuardOptions {
  matcher: HostMatcher;
  onBlocked: (event: BlockedRequest) => void;
  logger?: Logger;
  /** Pages the worker opened itself: a refused document there is undone, the tab kept. Default: the context's first page. */
  isTrusted?: (page: Page) => boolean;
  /** Each refused top-level navigation of a page (after `onBlocked`). */
  onRefusedNavigation?: (page: Page, url: string) => void;
  /**
   * Receives each download the allow-list permits (downloads.ts saves it); without it every
   * download is refused. Downloads from elsewhere are always refused here.
   */
  onDownload?: (download: Download) => void;
}

export interface RequestGuard {
  /** Stops guarding (routes removed); idempotent and safe after the context closed. */
  detach(): Promise<void>;
}

/** Documents a page may show at the top level besides allowed network URLs. */
function isInertDocument(url: string): boolean {
  // about:blank is the initial document of every tab; chrome-error:// is Chromium's own page for
  // a refused or failed navigation (it loads nothing from the network).
  return url === 'about:blank' || url === 'about:srcdoc' || url.startsWith('chrome-error://');
}

export async function attachRequestGuard(context: BrowserContext, options: RequestGuardOptions): Promise<RequestGuard> {
  const { matcher, onBlocked, logger, onDownload } = options;
  const trusted = (page: Page): boolean => (options.isTrusted ? options.isTrusted(page) : context.pages()[0] === page);
  let detached = false;

  const report = (event: BlockedRequest): void => {
    try {
      onBlocked(event);
    } catch (error) {
      logger?.warn({ err: (error as Error).message }, 'onBlocked handler threw');
    }
  };

  const closedPopups = new WeakSet<Page>();
  // A popup whose first navigation is refused reaches us already on Chromium's error page;
  // the refused URL is remembered to name it in the popup's event.
  let lastRefusedNavigation: string | undefined;
  /** Closes `page` when it is a popup (any tab but the first one of the context). */
  const closeIfPopup = (page: Page, url: string, reason: string): void => {
    if (page.isClosed() || closedPopups.has(page) || trusted(page)) return;
    closedPopups.add(page);
    report({ url, layer: 'popup', reason: `popup closed: ${reason}` });
    // Reported above; a popup that cannot be closed has closed already.
    page.close().catch(() => undefined);
  };

  const onRoute = async (route: Route): Promise<void> => {
    const request = route.request();
    const url = request.url();
    const verdict = matcher.allowsUrl(url);
    if (verdict.ok) {
      await route.fallback();
      return;
    }
    report({ url, layer: 'request-guard', reason: verdict.reason });
    // Reported above; a route that cannot be aborted belongs to a page already gone.
    await route.abort('blockedbyclient').catch(() => undefined);
    if (request.isNavigationRequest()) {
      lastRefusedNavigation = url;
      const frame = safeFrame(request);
      if (frame !== undefined && frame.parentFrame() === null) {
        options.onRefusedNavigation?.(frame.page(), url);
        closeIfPopup(frame.page(), url, verdict.reason);
      }
    }
  };

  const onWebSocket = async (ws: WebSocketRoute): Promise<void> => {
    const url = ws.url();
    const verdict = matcher.allowsUrl(url);
    if (!verdict.ok) {
      report({ url, layer: 'websocket', reason: verdict.reason });
      // 1008: policy violation.
      // Reported above; the socket was never connected past the guard, closing it only tidies up.
      await ws.close({ code: 1008, reason: 'blocked by confinement' }).catch(() => undefined);
      return;
    }
    ws.connectToServer();
  };

  /**
   * A committed top-level document. A refused http(s) navigation shows Chromium's error page
   * under the refused URL (the route already reported it): a popup in that state is closed.
   * A document of a non-network scheme (`data:`, `blob:`, `file:`, …) is reported and undone.
   */
  const onFrameNavigated = (page: Page, frame: Frame): void => {
    if (frame !== page.mainFrame()) return;
    const url = frame.url();
    if (url.startsWith('chrome-error://')) {
      closeIfPopup(page, lastRefusedNavigation ?? url, 'its navigation was refused or failed');
      return;
    }
    if (isInertDocument(url)) return;
    const verdict = matcher.allowsUrl(url);
    if (verdict.ok) return;
    const shown = truncateUrl(url);
    if (/^(https?|wss?):/i.test(url)) {
      closeIfPopup(page, shown, verdict.reason);
      return;
    }
    report({ url: shown, layer: 'request-guard', reason: `top-level document refused: ${verdict.reason}` });
    options.onRefusedNavigation?.(page, shown);
    if (!trusted(page)) {
      closeIfPopup(page, shown, verdict.reason);
      return;
    }
    // Reported above, and the proxy refuses the document anyway; a page that cannot leave it is closing.
    page.goto('about:blank').catch(() => undefined);
  };

  const watchPage = (page: Page): void => {
    if (page.url().startsWith('chrome-error://')) closeIfPopup(page, lastRefusedNavigation ?? page.url(), 'its navigation was refused or failed');
    page.on('framenavigated', (frame) => onFrameNavigated(page, frame));
    page.on('download', (download) => {
      // The URL after redirects: a hop the proxy let through (it refuses the others) still has
      // to land on an allowed host. `<a download>` requests are not routed, so this is their check.
      const verdict = downloadVerdict(matcher, download.url(), page.url());
      if (!verdict.ok || !onDownload) {
        report({ url: truncateUrl(download.url()), layer: 'download', reason: verdict.ok ? 'downloads are disabled' : verdict.reason });
        // Reported above; a download that cannot be cancelled has ended, and none of it is kept.
        download.cancel().catch(() => undefined);
        return;
      }
      onDownload(download);
    });
    page.on('console', (message) => {
      // `serviceWorkers: 'block'` makes registration fail quietly; its console line is the only
      // trace of the attempt, and an attempt is worth a `blocked` event.
      if (/service ?worker registration blocked/i.test(message.text())) {
        report({ url: page.url(), layer: 'service-worker', reason: 'service workers are blocked' });
      }
    });
  };

  const onPage = (page: Page): void => watchPage(page);
  const onServiceWorker = (worker: { url(): string }): void => {
    report({ url: worker.url(), layer: 'service-worker', reason: 'service workers are blocked' });
  };
  const onRequest = (request: { url(): string }): void => {
    // Observation only: the route above decides. Logged so that a request Playwright reports
    // but did not route (should never happen) leaves a trace.
    const verdict = matcher.allowsUrl(request.url());
    if (!verdict.ok) logger?.debug({ url: truncateUrl(request.url()), reason: verdict.reason }, 'request seen by guard');
  };

  await context.route('**/*', onRoute);
  await context.routeWebSocket(/.*/, onWebSocket);
  context.on('page', onPage);
  context.on('serviceworker', onServiceWorker);
  context.on('request', onRequest);
  for (const page of context.pages()) watchPage(page);

  const detach = async (): Promise<void> => {
    if (detached) return;
    detached = true;
    context.off('page', onPage);
    context.off('serviceworker', onServiceWorker);
    context.off('request', onRequest);
    // Closing: a context that is gone has no routes left to remove.
    await context.unroute('**/*', onRoute).catch(() => undefined);
  };

  return { detach };
}

/**
 * Where a download's bytes come from: an http(s) URL must be allowed; a `blob:` URL belongs to
 * the origin inside it, and a `data:` URL to the page that made it (both were made by a page
 * of an allowed host, and reach no other host). Every other scheme is refused.
 */
export function downloadVerdict(matcher: HostMatcher, url: string, pageUrl: string): { ok: true } | { ok: false; reason: string } {
  if (/^blob:/i.test(url)) {
    const verdict = matcher.allowsUrl(url.slice('blob:'.length));
    return verdict.ok ? verdict : { ok: false, reason: `a blob of another origin: ${verdict.reason}` };
  }
  if (/^data:/i.test(url)) {
    const verdict = matcher.allowsUrl(pageUrl);
    return verdict.ok ? verdict : { ok: false, reason: `a data: URL of a page outside the allow-list: ${verdict.reason}` };
  }
  return matcher.allowsUrl(url);
}

function safeFrame(request: { frame(): Frame }): Frame | undefined {
  try {
    return request.frame();
  } catch {
    // Requests of service workers have no frame.
    return undefined;
  }
}

/** data: URLs can be megabytes long; the event keeps their start. */
function truncateUrl(url: string): string {
  return url.length > 256 ? `${url.slice(0, 256)}…` : url;
}
