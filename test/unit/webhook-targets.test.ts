import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkedAddress, parseTarget } from '../../src/local-service/webhooks/targets.js';

/**
 * Receiver URLs (docs/api.md#webhooks): a link-local address is refused in whatever spelling the
 * caller writes it — WHATWG URL's IPv4 forms (decimal, hex, octal, fewer parts) and IPv6's
 * embedding forms — private and CGNAT addresses are refused unless allowed, and loopback is
 * taken. Generated over the whole of 169.254.0.0/16, the private ranges and 127/8.
 */

const linkLocal = fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 })).map(([c, d]) => [169, 254, c, d] as const);

const spellings = (o: readonly number[]): string[] => {
  const n = ((o[0]! << 24) >>> 0) + (o[1]! << 16) + (o[2]! << 8) + o[3]!;
  const hex = (x: number) => x.toString(16);
  return [
    o.join('.'),
    String(n),
    `0x${hex(n)}`,
    o.map((x) => `0${x.toString(8)}`).join('.'),
    o.map((x) => `0x${hex(x)}`).join('.'),
    `${o[0]}.${o[1]}.${(o[2]! << 8) + o[3]!}`,
    `${o[0]}.${(o[1]! << 16) + (o[2]! << 8) + o[3]!}`,
    `[::ffff:${o.join('.')}]`,
    `[::ffff:${hex((o[0]! << 8) + o[1]!)}:${hex((o[2]! << 8) + o[3]!)}]`,
    `[0:0:0:0:0:ffff:${hex((o[0]! << 8) + o[1]!)}:${hex((o[2]! << 8) + o[3]!)}]`,
    `[64:ff9b::${o.join('.')}]`,
    `[2002:${hex((o[0]! << 8) + o[1]!)}:${hex((o[2]! << 8) + o[3]!)}::1]`,
    // RFC 2765's translated form (::ffff:0:0/96), RFC 8215's local-use NAT64 (64:ff9b:1::/48).
    `[::ffff:0:${hex((o[0]! << 8) + o[1]!)}:${hex((o[2]! << 8) + o[3]!)}]`,
    `[64:ff9b:1::${hex((o[0]! << 8) + o[1]!)}:${hex((o[2]! << 8) + o[3]!)}]`,
    `[64:ff9b:1:ab::${o.join('.')}]`,
    // Teredo (2001::/32): the client's IPv4 address in the last 32 bits, XOR 0xffffffff.
    `[2001:0:4136:e378:8000:63bf:${hex(~((o[0]! << 8) + o[1]!) & 0xffff)}:${hex(~((o[2]! << 8) + o[3]!) & 0xffff)}]`,
  ];
};

describe('webhook targets', () => {
  it('refuses every spelling of every link-local address', () => {
    fc.assert(fc.property(linkLocal, fc.constantFrom('http', 'https'), (octets, scheme) => {
      for (const host of spellings(octets)) {
        const parsed = parseTarget(`${scheme}://${host}/hook`);
        expect(parsed.ok, host).toBe(false);
      }
    }), { numRuns: 300 });
  });

  it('refuses the whole of AWS\'s fd00:ec2::/32', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 6, maxLength: 6 }), (groups) => {
      const host = `[fd00:ec2:${groups.map((g) => g.toString(16)).join(':')}]`;
      expect(parseTarget(`http://${host}/hook`).ok, host).toBe(false);
    }), { numRuns: 300 });
  });

  it('refuses every spelling of a private or CGNAT address unless private networks are allowed; takes loopback either way', () => {
    const octet = fc.integer({ min: 0, max: 255 });
    const privateV4 = fc.oneof(
      fc.tuple(octet, octet, octet).map(([b, c, d]) => [10, b, c, d]),
      fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => [172, b, c, d]),
      fc.tuple(octet, octet).map(([c, d]) => [192, 168, c, d]),
      fc.tuple(fc.integer({ min: 64, max: 127 }), octet, octet).map(([b, c, d]) => [100, b, c, d]),
    );
    const allowing = { allowPrivateNetworks: true };
    fc.assert(fc.property(privateV4, (octets) => {
      for (const host of spellings(octets)) {
        expect(parseTarget(`http://${host}/hook`).ok, host).toBe(false);
        expect(parseTarget(`http://${host}/hook`, allowing).ok, host).toBe(true);
      }
    }), { numRuns: 300 });
    const ula = fc.tuple(fc.integer({ min: 0xfc00, max: 0xfdff }), fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 }))
      .filter(([first, rest]) => !(first === 0xfd00 && rest[0] === 0xec2))
      .map(([first, rest]) => `[${[first, ...rest].map((g) => g.toString(16)).join(':')}]`);
    fc.assert(fc.property(ula, (host) => {
      expect(parseTarget(`http://${host}/hook`).ok, host).toBe(false);
      expect(parseTarget(`http://${host}/hook`, allowing).ok, host).toBe(true);
    }), { numRuns: 300 });
    fc.assert(fc.property(fc.tuple(octet, octet, octet), ([b, c, d]) => {
      for (const host of spellings([127, b, c, d])) expect(parseTarget(`http://${host}/hook`).ok, host).toBe(true);
    }), { numRuns: 100 });
  });

  it('takes loopback and public receivers, and refuses what is not http(s) or carries credentials', () => {
    for (const url of ['http://127.0.0.1:8080/hook', 'http://[::1]/', 'http://8.8.8.8/', 'https://[2606:4700::1111]/x', 'http://localhost:3000/']) expect(parseTarget(url).ok, url).toBe(true);
    for (const url of ['ftp://127.0.0.1/', 'file:///etc/passwd', 'http://user:pw@127.0.0.1/', 'not a url']) expect(parseTarget(url).ok, url).toBe(false);
  });

  it('refuses a name when any address it resolves to is refused, without connecting', async () => {
    const parsed = parseTarget('http://mixed.test/hook');
    if (!parsed.ok) throw new Error('parsed');
    const refused = await checkedAddress(parsed.target, async () => ['127.0.0.1', '169.254.169.254']);
    // The kind, not the address: the attempt list is no way to read the host's DNS.
    expect(refused).toEqual({ ok: false, reason: 'mixed.test resolves to a link-local, metadata or non-host address' });
    expect(await checkedAddress(parsed.target, async () => ['127.0.0.1'])).toEqual({ ok: true, address: '127.0.0.1' });
    expect(await checkedAddress(parsed.target, async () => ['10.0.0.7'])).toEqual({ ok: false, reason: 'mixed.test resolves to a private network address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is not set)' });
    expect(await checkedAddress(parsed.target, async () => ['10.0.0.7'], { allowPrivateNetworks: true })).toEqual({ ok: true, address: '10.0.0.7' });
  });
});
