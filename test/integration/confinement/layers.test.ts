/**
 * Each confinement layer on its own (docs/specification.md#the-allow-list): the egress proxy without the Playwright guard,
 * the guard behind a proxy that would let evil through, the launch flags without either, the
 * proxy spoken to directly — and control runs without confinement, proving that the suite's
 * observers do see a leak when there is one.
 */
import http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startEgressProxy } from '../../../src/browser/egress-proxy.js';
import { createHostMatcher } from '../../../src/browser/host-matcher.js';
import { parseHostRules } from '../../../src/browser/host-rules.js';
import type { BlockedRequest } from '../../../src/browser/types.js';
import { fixtureUrl, openCase, startHarness, type CaseRun, type Harness, type Mode } from '../../fixtures/confinement/harness.js';

interface LayerCase {
  name: string;
  fixture: string;
  extra?: Record<string, string>;
  allowedDomains?: string[];
  /** Which refusal ends the attempt (default: one carrying the token). */
  until?: (e: BlockedRequest, c: CaseRun) => boolean;
}

const viaTunnel = (e: BlockedRequest): boolean => e.url.includes('evil.test');

async function runLayerCase(harness: Harness, mode: Mode, testCase: LayerCase): Promise<CaseRun> {
  const c = await openCase(harness, { name: `${mode}-${testCase.name}`, mode, allowedDomains: testCase.allowedDomains });
  try {
    await c.navigate(fixtureUrl(testCase.fixture, c.token, testCase.extra));
    await c.waitBlocked(testCase.until ? (e) => testCase.until?.(e, c) ?? false : undefined);
  } finally {
    await c.finish();
  }
  expect(harness.evil.hitsWith(c.token)).toEqual([]);
  return c;
}

describe('confinement layers, each alone', () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness({ confined: true });
  });

  afterAll(async () => {
    await harness?.close();
  });

  describe('layer 1: the egress proxy without the Playwright guard', () => {
    const cases: LayerCase[] = [
      { name: 'redirect-img', fixture: 'redirect-img' },
      { name: 'fetch', fixture: 'fetch' },
      { name: 'iframe', fixture: 'iframe' },
      { name: 'form-post', fixture: 'form-post' },
      { name: 'css-url', fixture: 'css-url' },
      { name: 'eventsource', fixture: 'eventsource' },
      { name: 'js-location', fixture: 'js-location' },
      { name: 'websocket-page', fixture: 'ws-page', until: viaTunnel },
      { name: 'websocket-dedicated-worker', fixture: 'ws-worker', until: viaTunnel },
      { name: 'websocket-shared-worker', fixture: 'ws-shared-worker', until: viaTunnel },
      // Without the guard's `serviceWorkers: 'block'` the worker installs; its fetch meets the proxy.
      { name: 'service-worker-fetch', fixture: 'sw-fetch' },
      { name: 'ip-literal-decimal', fixture: 'ip-literal', extra: { host: '2130706433' } },
      { name: 'ip-literal-mapped-v6', fixture: 'ip-literal', extra: { host: '[::ffff:127.0.0.1]' } },
      { name: 'trailing-dot', fixture: 'probe', extra: { u: 'http://evil.test./trailing-dot' } },
      { name: 'idn-lookalike', fixture: 'probe', extra: { u: 'http://аllowed.test/lookalike' } },
      {
        name: 'allowed-name-private-address',
        fixture: 'ip-literal',
        extra: { host: 'localhost' },
        allowedDomains: ['allowed.test', 'localhost'],
        until: (e, c) => e.url.includes(c.token) && /non-public address/.test(e.reason),
      },
    ];

    it.each(cases.map((c) => [c.name, c] as const))('%s is refused by the proxy', async (_name, testCase) => {
      const c = await runLayerCase(harness, 'proxy-only', testCase);
      expect(c.blocked.length).toBeGreaterThan(0);
      for (const event of c.blocked) expect(event.layer).toBe('proxy');
    });
  });

  describe('layer 3: the Playwright guard behind a proxy that would let evil through', () => {
    const cases: LayerCase[] = [
      // Not redirect hops: Playwright routes a request once, not the hops it is redirected to.
      // The proxy is the layer that refuses those (above, and in the adversarial suite).
      { name: 'fetch', fixture: 'fetch' },
      { name: 'iframe', fixture: 'iframe' },
      { name: 'form-post', fixture: 'form-post' },
      { name: 'js-location', fixture: 'js-location' },
      { name: 'websocket-page', fixture: 'ws-page' },
      { name: 'window-open', fixture: 'window-open', until: (e) => e.layer === 'popup' },
      { name: 'blob-top-level', fixture: 'blob-nav', until: (e) => e.url.startsWith('blob:') },
    ];

    it.each(cases.map((c) => [c.name, c] as const))('%s is refused by the guard', async (_name, testCase) => {
      const c = await runLayerCase(harness, 'guard-only', testCase);
      for (const event of c.blocked) expect(['request-guard', 'websocket', 'popup']).toContain(event.layer);
    });
  });

  describe('layer 2: launch flags', () => {
    it('a context without the session proxy reaches nothing, not even an allowed, mapped name', async () => {
      const context = await harness.browser.newContext();
      try {
        const page = await context.newPage();
        const error = await page.goto('http://allowed.test/case/blank.html?t=no-proxy-context').then(
          () => undefined,
          (e: Error) => e.message,
        );
        expect(error).toMatch(/ERR_/);
      } finally {
        await context.close();
      }
      expect(harness.allowed.hitsWith('no-proxy-context')).toEqual([]);
    });

    it('WebRTC sends no STUN packet, with the proxy and the guard in place', async () => {
      const c = await openCase(harness, { name: 'flags-webrtc', mode: 'full' });
      try {
        await c.navigate(fixtureUrl('webrtc', c.token));
        await c.waitDone();
      } finally {
        await c.finish();
      }
      expect(harness.udp.packets).toEqual([]);
    });

    it('resolver catch-all, QUIC off, WebRTC policy, loopback proxied, no debugging port', () => {
      const args = harness.confinement.launchArgs();
      const rules = args.find((a) => a.startsWith('--host-resolver-rules='));
      expect(rules).toMatch(/,MAP \* ~NOTFOUND$/);
      expect(rules).not.toMatch(/EXCLUDE/);
      expect(args).toContain('--disable-quic');
      expect(args).toContain('--force-webrtc-ip-handling-policy=disable_non_proxied_udp');
      expect(args).toContain('--proxy-bypass-list=<-loopback>');
      expect(args.some((a) => a.startsWith('--remote-debugging-port'))).toBe(false);
    });
  });

  describe('layer 4: the navigate tool', () => {
    it('refuses before anything is sent and reports it', async () => {
      const c = await openCase(harness, { name: 'navigate-tool', mode: 'full' });
      try {
        const url = `http://evil.test/navigate-tool?t=${c.token}`;
        expect(c.checkUrl(url)).toEqual({ ok: false, reason: 'host "evil.test" is not in the allow-list' });
        expect(c.blocked).toEqual([{ url, layer: 'navigate-tool', reason: 'host "evil.test" is not in the allow-list' }]);
        expect(c.checkUrl(fixtureUrl('blank', c.token))).toEqual({ ok: true });
      } finally {
        await c.finish();
      }
      expect(harness.evil.hitsWith(c.token)).toEqual([]);
    });
  });

  it('evil heard nothing at all', () => {
    expect(harness.evil.hits).toEqual([]);
    expect(harness.udp.packets).toEqual([]);
  });
});

describe('the egress proxy spoken to directly', () => {
  const hostRules = parseHostRules('MAP allowed.test 127.0.0.1,MAP gone.test ~NOTFOUND');
  let origin: http.Server;
  let originPort = 0;
  const seen: string[] = [];

  beforeAll(async () => {
    origin = http.createServer((req, res) => {
      seen.push(`${req.headers.host ?? ''} ${req.url ?? ''}`);
      res.end('origin');
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    originPort = (origin.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => origin.close(resolve));
  });

  function viaProxy(proxyPort: number, options: { method: string; path: string; host?: string }): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: proxyPort, method: options.method, path: options.path, headers: options.host ? { host: options.host } : {} });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('connect', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('forwards an allowed, mapped name and refuses everything else, with a reason', async () => {
    const blocked: BlockedRequest[] = [];
    const proxy = await startEgressProxy({ matcher: createHostMatcher(['allowed.test', 'gone.test']), hostRules, onBlocked: (e) => blocked.push(e) });
    try {
      expect(await viaProxy(proxy.port, { method: 'GET', path: `http://allowed.test:${originPort}/ok` })).toBe(200);
      expect(await viaProxy(proxy.port, { method: 'CONNECT', path: `allowed.test:${originPort}` })).toBe(200);
      expect(await viaProxy(proxy.port, { method: 'GET', path: `http://evil.test:${originPort}/x` })).toBe(403);
      expect(await viaProxy(proxy.port, { method: 'CONNECT', path: `127.0.0.1:${originPort}` })).toBe(403);
      expect(await viaProxy(proxy.port, { method: 'CONNECT', path: `[::1]:${originPort}` })).toBe(403);
      expect(await viaProxy(proxy.port, { method: 'CONNECT', path: `gone.test:${originPort}` })).toBe(403);
      // Origin-form requests (someone using the proxy as a web server) are not proxied.
      expect(await viaProxy(proxy.port, { method: 'GET', path: '/x', host: `allowed.test:${originPort}` })).toBe(400);
      expect(await viaProxy(proxy.port, { method: 'CONNECT', path: 'allowed.test' })).toBe(400);
    } finally {
      await proxy.close();
    }
    expect(seen).toEqual([`allowed.test:${originPort} /ok`]);
    expect(blocked.map((e) => e.reason)).toEqual([
      'host "evil.test" is not in the allow-list',
      'host "127.0.0.1" is not in the allow-list',
      'host "[::1]" is not in the allow-list',
      'host "gone.test" does not resolve (host rules)',
      'not a proxy request',
      'malformed CONNECT target',
    ]);
  });

  it('resolves once, refuses private answers, and connects to the address it checked', async () => {
    const lookups: string[] = [];
    const answers: Record<string, string[]> = {
      'private.example.com': ['10.0.0.7', '192.168.1.9'],
      'metadata.example.com': ['169.254.169.254'],
      'mapped-v6.example.com': ['::ffff:127.0.0.1'],
      // A listed address is the operator's permission: this one is the local origin.
      'listed.example.com': ['127.0.0.1'],
    };
    const blocked: BlockedRequest[] = [];
    const proxy = await startEgressProxy({
      matcher: createHostMatcher(['*.example.com', '127.0.0.1']),
      hostRules: parseHostRules(''),
      onBlocked: (e) => blocked.push(e),
      resolve: (host) => {
        lookups.push(host);
        return Promise.resolve(answers[host] ?? []);
      },
    });
    try {
      for (const host of ['private.example.com', 'metadata.example.com', 'mapped-v6.example.com', 'nowhere.example.com']) {
        expect(await viaProxy(proxy.port, { method: 'GET', path: `http://${host}:${originPort}/` }), host).toBe(403);
      }
      expect(await viaProxy(proxy.port, { method: 'GET', path: `http://listed.example.com:${originPort}/listed` })).toBe(200);
      // The proxy never tunnels into itself, even through a listed address.
      expect(await viaProxy(proxy.port, { method: 'CONNECT', path: `127.0.0.1:${proxy.port}` })).toBe(403);
    } finally {
      await proxy.close();
    }
    expect(lookups).toEqual(['private.example.com', 'metadata.example.com', 'mapped-v6.example.com', 'nowhere.example.com', 'listed.example.com']);
    expect(blocked.map((e) => e.reason)).toEqual([
      'host "private.example.com" resolves to a non-public address (10.0.0.7, 192.168.1.9)',
      'host "metadata.example.com" resolves to a non-public address (169.254.169.254)',
      'host "mapped-v6.example.com" resolves to a non-public address (::ffff:127.0.0.1)',
      'host "nowhere.example.com" resolves to a non-public address (nothing)',
      'the proxy does not connect to itself',
    ]);
    expect(seen).toContain(`listed.example.com:${originPort} /listed`);
  });

  it('admits only the listed port of a name mapped to loopback without a port', async () => {
    // Another loopback service (a Redis, the local API, the health port) behind the same name.
    const other = http.createServer((req, res) => {
      otherSeen.push(req.url ?? '');
      res.end('other');
    });
    const otherSeen: string[] = [];
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherPort = (other.address() as { port: number }).port;
    const blocked: BlockedRequest[] = [];
    const portLess = parseHostRules('MAP allowed.test 127.0.0.1');
    const listed = await startEgressProxy({ matcher: createHostMatcher([`allowed.test:${originPort}`]), hostRules: portLess, onBlocked: (e) => blocked.push(e) });
    const bare = await startEgressProxy({ matcher: createHostMatcher(['allowed.test']), hostRules: portLess, onBlocked: () => undefined });
    try {
      expect(await viaProxy(listed.port, { method: 'GET', path: `http://allowed.test:${originPort}/listed-port` })).toBe(200);
      expect(await viaProxy(listed.port, { method: 'CONNECT', path: `allowed.test:${originPort}` })).toBe(200);
      expect(await viaProxy(listed.port, { method: 'GET', path: `http://allowed.test:${otherPort}/other-port` })).toBe(403);
      expect(await viaProxy(listed.port, { method: 'CONNECT', path: `allowed.test:${otherPort}` })).toBe(403);
      expect(await viaProxy(listed.port, { method: 'GET', path: 'http://allowed.test/default-port' })).toBe(403);
      expect(otherSeen).toEqual([]);
      // Control: a bare name keeps "any port", so the same request does reach the other service.
      expect(await viaProxy(bare.port, { method: 'GET', path: `http://allowed.test:${otherPort}/bare` })).toBe(200);
      expect(otherSeen).toEqual(['/bare']);
    } finally {
      await Promise.all([listed.close(), bare.close()]);
      await new Promise((resolve) => other.close(resolve));
    }
    expect(blocked.map((e) => e.reason)).toEqual([
      `port ${otherPort} of host "allowed.test" is not in the allow-list`,
      `port ${otherPort} of host "allowed.test" is not in the allow-list`,
      'port 80 of host "allowed.test" is not in the allow-list',
    ]);
  });

  it('close() is idempotent and ends open tunnels', async () => {
    const proxy = await startEgressProxy({ matcher: createHostMatcher(['allowed.test']), hostRules, onBlocked: () => undefined });
    await Promise.all([proxy.close(), proxy.close()]);
    await expect(viaProxy(proxy.port, { method: 'GET', path: 'http://allowed.test/' })).rejects.toThrow();
  });
});

describe('control: without confinement the observers do see leaks', () => {
  let control: Harness;

  beforeAll(async () => {
    control = await startHarness({ confined: false });
  });

  afterAll(async () => {
    await control?.close();
  });

  it.each([
    ['fetch', 'fetch'],
    ['redirect-img', 'redirect-img'],
    ['websocket-dedicated-worker', 'ws-worker'],
  ])('%s reaches evil', async (name, fixture) => {
    const c = await openCase(control, { name: `control-${name}`, mode: 'none' });
    try {
      await c.navigate(fixtureUrl(fixture, c.token));
      await control.evil.waitForHit((hit) => hit.url.includes(c.token), 10_000);
    } finally {
      await c.finish();
    }
    expect(control.evil.hitsWith(c.token).length).toBeGreaterThan(0);
  });

  it('WebRTC reaches the loopback STUN listener', async () => {
    const c = await openCase(control, { name: 'control-webrtc', mode: 'none' });
    try {
      await c.navigate(fixtureUrl('webrtc', c.token));
      const packet = await control.udp.waitForPacket(10_000);
      // A STUN Binding Request starts with type 0x0001.
      expect(packet.readUInt16BE(0)).toBe(0x0001);
    } finally {
      await c.finish();
    }
  });
});
