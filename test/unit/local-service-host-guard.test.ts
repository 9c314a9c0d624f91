import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePublicHosts, type PublicHost } from '../../src/domain/public-hosts.js';
import { isServedHost } from '../../src/local-service/host-guard.js';

/**
 * Which Host the local service answers for (DNS rebinding): generated names, addresses and ports
 * against the rule, rather than a list of known bad hosts.
 */

const port = fc.integer({ min: 1, max: 65_535 });
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join('.'));
/** Names a rebinding page could use: any domain, never a loopback name. */
const name = fc.domain().filter((d) => d !== 'localhost' && !d.endsWith('.localhost'));

describe('isServedHost', () => {
  it('refuses every name not in PUBLIC_HOSTS, on any address and port', () => {
    fc.assert(
      fc.property(name, port, fc.constantFrom('127.0.0.1', '::1', '::ffff:127.0.0.1', '10.0.0.5', '::'), fc.array(name, { maxLength: 3 }), (host, p, local, listed) => {
        fc.pre(!listed.includes(host.toLowerCase()));
        const publicHosts: PublicHost[] = listed.map((hostname) => ({ hostname: hostname.toLowerCase(), port: undefined }));
        expect(isServedHost(`${host}:${p}`, local, p, publicHosts)).toBe(false);
        expect(isServedHost(host, local, 80, publicHosts)).toBe(false);
      }),
    );
  });

  it('serves the address a request arrived on, on the listening port only', () => {
    fc.assert(
      fc.property(ipv4, port, port, (local, listening, other) => {
        expect(isServedHost(`${local}:${listening}`, local, listening, [])).toBe(true);
        expect(isServedHost(`${local}:${listening}`, `::ffff:${local}`, listening, [])).toBe(true);
        if (other !== listening) expect(isServedHost(`${local}:${other}`, local, listening, [])).toBe(false);
      }),
    );
  });

  it('serves the loopback names only to a request that arrived on loopback', () => {
    fc.assert(
      fc.property(port, fc.constantFrom('localhost', 'LocalHost', '127.0.0.1', '[::1]', '[0:0:0:0:0:0:0:1]'), (p, loopbackName) => {
        expect(isServedHost(`${loopbackName}:${p}`, '127.0.0.1', p, [])).toBe(true);
        expect(isServedHost(`${loopbackName}:${p}`, '::1', p, [])).toBe(true);
        expect(isServedHost(`${loopbackName}:${p}`, '192.168.1.20', p, [])).toBe(false);
      }),
    );
  });

  it('serves a listed name whatever its case, on any port or on the listed one', () => {
    fc.assert(
      fc.property(name, port, port, (listed, p, other) => {
        const anyPort = parsePublicHosts(listed);
        const onePort = parsePublicHosts(`${listed}:${p}`);
        expect(isServedHost(`${listed.toUpperCase()}:${other}`, '10.0.0.5', 8080, anyPort)).toBe(true);
        expect(isServedHost(`${listed}:${p}`, '10.0.0.5', 8080, onePort)).toBe(true);
        if (other !== p) expect(isServedHost(`${listed}:${other}`, '10.0.0.5', 8080, onePort)).toBe(false);
      }),
    );
  });

  it('refuses anything that is not a bare authority', () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom('@', '/', '?', '#', ' ', '\\', '\t'), fc.string(), (before, odd, after) => {
        expect(isServedHost(`${before}${odd}${after}`, '127.0.0.1', 8080, parsePublicHosts('localhost'))).toBe(false);
      }),
    );
    expect(isServedHost(undefined, '127.0.0.1', 8080, [])).toBe(false);
    expect(isServedHost('127.0.0.1:8080', undefined, 8080, [])).toBe(false);
  });
});

describe('parsePublicHosts', () => {
  it('reads names and name:port, comma-separated, and refuses what is not a host', () => {
    expect(parsePublicHosts(' api , Proxy.Example:8443,,[::1]:9000 ')).toEqual([
      { hostname: 'api', port: undefined },
      { hostname: 'proxy.example', port: 8443 },
      { hostname: '[::1]', port: 9000 },
    ]);
    expect(parsePublicHosts(undefined)).toEqual([]);
    for (const bad of ['http://api', 'api/x', 'user@api', 'api:99999', 'a b']) expect(() => parsePublicHosts(bad), bad).toThrow(/PUBLIC_HOSTS/);
  });
});
