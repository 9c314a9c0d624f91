/**
 * Confinement (docs/specification.md#the-allow-list): nothing outside the workflow's allow-list is reachable, whatever a
 * page or the model tries. Four layers, all asking the same host matcher:
 *   1. a per-session egress proxy (egress-proxy.ts), handed to the context as its proxy;
 *   2. Chromium launch flags so nothing goes around that proxy (`launchArgs`);
 *   3. a Playwright guard on every request, WebSocket, popup and download of the context
 *      (request-guard.ts);
 *   4. `checkUrl`, which the navigate tool calls before anything is sent.
 * Every refusal is reported through `onBlocked`; the session goes on.
 */
import type { BrowserContext, Download, Page } from 'playwright-core';

import type { BlockedRequest } from './types.js';
import type { Logger } from '../telemetry/types.js';
import { startEgressProxy, type EgressProxy } from './egress-proxy.js';
import { createHostMatcher } from './host-matcher.js';
import { parseHostRules, type HostRules } from './host-rules.js';
import { attachRequestGuard, type RequestGuard } from './request-guard.js';

export interface Confinement {
  /** Chromium flags owned by the confinement (network); pass them to every launch. */
  launchArgs(): string[];
  /** Starts the per-execution proxy and builds the guard for one session. */
  openSessionGuard(opts: { allowedDomains: readonly string[]; onBlocked: (e: BlockedRequest) => void }): Promise<SessionGuard>;
}

export interface SessionGuard {
  /**
   * Options for `browser.newContext` (spread them in): the session's proxy, with loopback
   * forced through it, service workers blocked and downloads refused (a session that saves
   * downloads overrides `acceptDownloads` and passes `onDownload` to `attach`).
   */
  contextOptions: {
    proxy?: { server: string; bypass?: string };
    serviceWorkers?: 'block';
    acceptDownloads?: boolean;
  };
  /**
   * Installs the request guard on the context; call once, before the first page navigates.
   * `onDownload` receives the downloads the allow-list permits (create the context with
   * `acceptDownloads: true` then); without it every download is refused.
   */
  attach(context: BrowserContext, options?: { onDownload?: (download: Download) => void }): Promise<void>;
  /** The navigate tool's check, before anything is sent. */
  checkUrl(url: string): { ok: true } | { ok: false; reason: string };
  /** A page the worker opened (not a popup): never closed by the guard, only sent back to about:blank. */
  trustPage(page: Page): void;
  /** Told of each top-level navigation of a page that the guard refused. */
  onRefusedNavigation(listener: (page: Page, url: string) => void): void;
  /** Detaches the guard and stops the proxy; idempotent. */
  close(): Promise<void>;
}

/**
 * The proxy is addressed by this reserved name (RFC 2606 `.invalid`), mapped to loopback in the
 * resolver rules: `MAP * ~NOTFOUND` would otherwise send the proxy's own address nowhere, and a
 * name lets one launch-time rule serve every session's proxy port.
 */
export const PROXY_HOST = 'egress-proxy.invalid';

/**
 * Where the browser-wide (default) network context sends traffic: a proxy name that resolves
 * nowhere. Contexts of sessions override it with their own proxy; anything else the browser
 * might send outside a session (background fetches) dies here instead of leaving directly.
 */
const DEAD_END_PROXY = 'http://no-direct-egress.invalid:9';

export function createConfinement(opts: { hostRules?: string; logger?: Logger }): Confinement {
  const hostRules: HostRules = parseHostRules(opts.hostRules);
  const logger = opts.logger;
  if (hostRules.rules.some((rule) => rule.kind === 'exclude')) {
    logger?.warn({}, 'BROWSER_HOST_RULES: EXCLUDE rules are ignored by the browser (they would bypass the catch-all)');
  }

  const launchArgs = (): string[] => {
    const mapped = hostRules.format({ withExcludes: false });
    const resolverRules = [mapped, `MAP ${PROXY_HOST} 127.0.0.1`, 'MAP * ~NOTFOUND'].filter((r) => r !== '').join(',');
    return [
      // Operator mappings (BROWSER_HOST_RULES) first, then the proxy's name, then every other
      // name resolves nowhere: the browser itself never performs a useful DNS lookup, and no
      // EXCLUDE is ever passed (it would exempt a name from the catch-all).
      `--host-resolver-rules=${resolverRules}`,
      // Browser-wide proxy to a dead end, so the default network context never connects
      // directly; each session's context overrides it with its own egress proxy.
      `--proxy-server=${DEAD_END_PROXY}`,
      // Chromium sends loopback directly unless told otherwise: loopback goes through the proxy too.
      '--proxy-bypass-list=<-loopback>',
      // QUIC is UDP and would not use an HTTP proxy.
      '--disable-quic',
      // WebRTC may use only proxied transports: no STUN/TURN/host candidates over raw UDP.
      '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
      '--webrtc-ip-handling-policy=disable_non_proxied_udp',
      // No background traffic (safe browsing, variations, update checks) to reason about.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-domain-reliability',
      '--no-pings',
      // DNS-over-HTTPS needs no flag of its own: it could only resolve names the rules above
      // already send nowhere. Features that only make noise at the proxy (autofill queries)
      // are turned off by the sandbox's one `--disable-features` (chromium-features.ts): a
      // second one here would replace it, as Chromium keeps only the last occurrence.
    ];
  };

  const openSessionGuard = async (sessionOpts: {
    allowedDomains: readonly string[];
    onBlocked: (e: BlockedRequest) => void;
  }): Promise<SessionGuard> => {
    // Throws invalid_specification before anything starts when the allow-list is bad.
    const matcher = createHostMatcher(sessionOpts.allowedDomains);
    const onBlocked = (event: BlockedRequest): void => {
      logger?.info({ url: event.url, layer: event.layer, reason: event.reason }, 'request blocked');
      sessionOpts.onBlocked(event);
    };
    const proxy: EgressProxy = await startEgressProxy({ matcher, hostRules, onBlocked, logger });
    let guard: RequestGuard | undefined;
    let closing: Promise<void> | undefined;
    const trusted = new WeakSet<Page>();
    let navigationListener: ((page: Page, url: string) => void) | undefined;

    const attach = async (context: BrowserContext, attachOptions: { onDownload?: (download: Download) => void } = {}): Promise<void> => {
      if (guard !== undefined) throw new Error('session guard already attached');
      guard = await attachRequestGuard(context, {
        matcher,
        onBlocked,
        logger,
        // The context's first page is the one the sandbox opens for the session; later ones the
        // worker opened itself (new_tab) are registered with trustPage.
        isTrusted: (page) => trusted.has(page) || context.pages()[0] === page,
        onRefusedNavigation: (page, url) => navigationListener?.(page, url),
        ...(attachOptions.onDownload ? { onDownload: attachOptions.onDownload } : {}),
      });
    };

    const checkUrl = (url: string): { ok: true } | { ok: false; reason: string } => {
      const verdict = matcher.allowsUrl(url);
      if (!verdict.ok) onBlocked({ url, layer: 'navigate-tool', reason: verdict.reason });
      return verdict;
    };

    const close = (): Promise<void> => {
      closing ??= (async () => {
        const results = await Promise.allSettled([guard?.detach(), proxy.close()]);
        for (const result of results) {
          if (result.status === 'rejected') logger?.warn({ err: String(result.reason) }, 'session guard cleanup failed');
        }
      })();
      return closing;
    };

    return {
      contextOptions: {
        // `<-loopback>` explicitly, so loopback is proxied even if Playwright's own default
        // (PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK) is turned off.
        proxy: { server: `http://${PROXY_HOST}:${proxy.port}`, bypass: '<-loopback>' },
        serviceWorkers: 'block',
        acceptDownloads: false,
      },
      attach,
      checkUrl,
      trustPage: (page) => void trusted.add(page),
      onRefusedNavigation: (listener) => {
        navigationListener = listener;
      },
      close,
    };
  };

  return { launchArgs, openSessionGuard };
}
