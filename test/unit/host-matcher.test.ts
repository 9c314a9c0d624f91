import { describe, expect, it } from 'vitest';

import { isPublicAddress } from '../../src/browser/egress-proxy.js';
import { createHostMatcher } from '../../src/browser/host-matcher.js';
import { isPublicSuffix, canonicalHost, validateAllowList } from '../../src/contract/allow-list.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { parseSpecification } from '../../src/domain/specification.js';

function specError(fn: () => unknown): ExecutionError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ExecutionError);
    return error as ExecutionError;
  }
  throw new Error('expected invalid_specification');
}

describe('validateAllowList', () => {
  it.each([
    ['an empty list', []],
    ['a non-array', 'example.com'],
    ['an empty entry', ['']],
    ['a blank entry', ['   ']],
    ['a non-string entry', [42]],
    ['a URL', ['https://example.com']],
    ['port 0', ['example.com:0']],
    ['a port past 65535', ['example.com:70000']],
    ['an empty port', ['example.com:']],
    ['a named port', ['example.com:http']],
    ['a port with a leading zero', ['example.com:08443']],
    ['*.com with a port', ['*.com:443']],
    ['a bare IPv6 with a port-like tail', ['::1:8080x']],
    ['a path', ['example.com/path']],
    ['userinfo', ['user@example.com']],
    ['whitespace inside', ['exa mple.com']],
    ['a bare star', ['*']],
    ['a star inside', ['foo.*.com']],
    ['*.com', ['*.com']],
    ['*.test', ['*.test']],
    ['*.co.uk', ['*.co.uk']],
    ['*.com.au', ['*.com.au']],
    ['*.github.io', ['*.github.io']],
    // Suffixes a hand-written list once missed: the whole Public Suffix List decides.
    ['*.r2.dev', ['*.r2.dev']],
    ['*.com.uy', ['*.com.uy']],
    ['*.blogspot.co.uk', ['*.blogspot.co.uk']],
    ['*.s3.us-east-1.amazonaws.com', ['*.s3.us-east-1.amazonaws.com']],
    ['*.localhost', ['*.localhost']],
    ['*.CO.UK. (case and trailing dot do not hide a public suffix)', ['*.CO.UK.']],
    ['a wildcard on an IP', ['*.127.0.0.1']],
    ['an empty label', ['a..example.com']],
    ['a leading hyphen', ['-bad.example.com']],
    ['a backslash', ['example.com\\evil.test']],
    ['a malformed IPv6', ['[::1']],
    ['a percent escape', ['exa%6dple.com']],
    ['one bad entry among good ones', ['example.com', '*.com']],
  ])('rejects %s as invalid_specification', (_name, domains) => {
    expect(specError(() => validateAllowList(domains)).code).toBe('invalid_specification');
  });

  it('canonicalises entries: case, trailing dot, IDN, IPv4 spellings, IPv6', () => {
    expect(validateAllowList(['Example.COM.', '*.Shop.Example.co.uk', 'bücher.de', '0x7f.1', '2001:DB8::1', '[::ffff:192.0.2.1]'])).toEqual([
      { kind: 'host', host: 'example.com' },
      { kind: 'subtree', base: 'shop.example.co.uk' },
      { kind: 'host', host: 'xn--bcher-kva.de' },
      { kind: 'address', address: '127.0.0.1' },
      { kind: 'address', address: '[2001:db8::1]' },
      { kind: 'address', address: '[::ffff:c000:201]' },
    ]);
  });

  it('createHostMatcher refuses an empty list instead of allowing everything', () => {
    expect(specError(() => createHostMatcher([])).code).toBe('invalid_specification');
  });
});

describe('allowsUrl', () => {
  const matcher = createHostMatcher(['allowed.test', '*.example.com']);

  it.each([
    'http://allowed.test/',
    'https://allowed.test/path?q=1#frag',
    'HTTP://ALLOWED.TEST/',
    'http://AlLoWeD.TeSt/',
    'http://allowed.test./',
    'http://allowed.test:8080/',
    'https://user:secret@allowed.test/',
    'ws://allowed.test/socket',
    'wss://allowed.test/socket',
    // WHATWG reads a backslash as a path separator in special schemes: the host is allowed.test.
    'http://allowed.test\\@evil.test/',
    'http://example.com/',
    'http://shop.example.com/',
    'http://a.b.c.example.com./',
    'http://SHOP.EXAMPLE.COM/',
  ])('allows %s', (url) => {
    expect(matcher.allowsUrl(url)).toEqual({ ok: true });
  });

  it.each([
    ['userinfo that looks like the host', 'http://allowed.test@evil.test/'],
    ['userinfo with a password', 'http://allowed.test:80@evil.test/'],
    ['backslash before the userinfo sign', 'http://evil.test\\@allowed.test/'],
    ['a fragment hiding the host', 'http://evil.test#@allowed.test/'],
    ['a query hiding the host', 'http://evil.test?@allowed.test/'],
    ['a prefix-joined name', 'http://evilallowed.test/'],
    ['the allowed name as a subdomain of evil', 'http://allowed.test.evil.test/'],
    ['a subdomain of an exact entry', 'http://sub.allowed.test/'],
    ['a label-boundary miss of a wildcard', 'http://evilexample.com/'],
    ['a wildcard base below evil', 'http://example.com.evil.test/'],
    ['a double trailing dot', 'http://allowed.test../'],
    ['a Cyrillic look-alike', 'http://аllowed.test/'],
    ['a punycode look-alike', 'http://xn--llowed-6nf.test/'],
    ['a full-width dot trick', 'http://allowed\uff0eevil.test/'],
    ['the decimal loopback', 'http://2130706433/'],
    ['the hex loopback', 'http://0x7f000001/'],
    ['the octal loopback', 'http://0177.0.0.1/'],
    ['the short loopback', 'http://127.1/'],
    ['the dotted loopback', 'http://127.0.0.1:8080/'],
    ['zero', 'http://0/'],
    ['the metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', 'http://[::1]/'],
    ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/'],
    ['expanded IPv4-mapped IPv6', 'http://[0:0:0:0:0:ffff:7f00:1]/'],
    ['file:', 'file:///etc/passwd'],
    ['file: with the allowed host', 'file://allowed.test/etc/passwd'],
    ['chrome:', 'chrome://settings'],
    ['chrome-extension:', 'chrome-extension://abcdef/page.html'],
    ['data:', 'data:text/html,<h1>evil</h1>'],
    ['blob:', 'blob:http://allowed.test/0b2c4a3e-0000-4000-8000-000000000000'],
    ['javascript:', 'javascript:location="http://evil.test/"'],
    ['about:', 'about:config'],
    ['view-source:', 'view-source:http://allowed.test/'],
    ['ftp:', 'ftp://allowed.test/'],
    ['a relative URL', '/path'],
    ['a bare name', 'allowed.test'],
    ['garbage', 'http://'],
  ])('refuses %s', (_name, url) => {
    const verdict = matcher.allowsUrl(url);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(/./);
  });

  it('names the refused host or scheme in the reason', () => {
    expect(matcher.allowsUrl('http://2130706433/')).toEqual({ ok: false, reason: 'host "127.0.0.1" is not in the allow-list' });
    expect(matcher.allowsUrl('file:///etc/passwd')).toEqual({ ok: false, reason: 'the "file:" scheme is never reachable' });
  });

  it('matches internationalised names in either spelling', () => {
    const idn = createHostMatcher(['bücher.de', '*.münchen.de']);
    expect(idn.allowsUrl('http://xn--bcher-kva.de/').ok).toBe(true);
    expect(idn.allowsUrl('http://BÜCHER.de/').ok).toBe(true);
    expect(idn.allowsUrl('http://www.xn--mnchen-3ya.de/').ok).toBe(true);
    expect(idn.allowsUrl('http://bucher.de/').ok).toBe(false);
    expect(idn.allowsUrl('http://xn--bcher-kva.de.evil.test/').ok).toBe(false);
  });

  it('allows an IP address only when listed, in any spelling of that address', () => {
    const ips = createHostMatcher(['192.0.2.7', '[2001:db8::1]']);
    for (const url of ['http://192.0.2.7/', 'http://3221225991/', 'http://0xc0.0.2.7/', 'http://0300.0.2.7/', 'http://[2001:DB8:0:0:0:0:0:1]/']) {
      expect(ips.allowsUrl(url).ok, url).toBe(true);
    }
    for (const url of ['http://192.0.2.8/', 'http://[::ffff:192.0.2.7]/', 'http://[2001:db8::2]/', 'http://127.0.0.1/']) {
      expect(ips.allowsUrl(url).ok, url).toBe(false);
    }
  });

  it('never lets a wildcard match an IP address', () => {
    const wild = createHostMatcher(['*.example.com']);
    expect(wild.allowsUrl('http://93.184.216.34/').ok).toBe(false);
  });
});

describe('allowsHost and listsAddress', () => {
  const matcher = createHostMatcher(['allowed.test', '*.example.com', '10.0.0.5', '[fd00::1]']);

  it('checks bare hosts as the proxy receives them', () => {
    expect(matcher.allowsHost('ALLOWED.test.')).toBe(true);
    expect(matcher.allowsHost('deep.shop.example.com')).toBe(true);
    expect(matcher.allowsHost('10.0.0.5')).toBe(true);
    expect(matcher.allowsHost('167772165')).toBe(true);
    expect(matcher.allowsHost('[fd00::1]')).toBe(true);
    expect(matcher.allowsHost('fd00::1')).toBe(true);
    expect(matcher.allowsHost('allowed.test:80')).toBe(false);
    expect(matcher.allowsHost('allowed.test@evil.test')).toBe(false);
    expect(matcher.allowsHost('evil.test/allowed.test')).toBe(false);
    expect(matcher.allowsHost('evil.test')).toBe(false);
    expect(matcher.allowsHost('')).toBe(false);
  });

  it('knows which addresses are listed', () => {
    expect(matcher.listsAddress('10.0.0.5')).toBe(true);
    expect(matcher.listsAddress('fd00::1')).toBe(true);
    expect(matcher.listsAddress('[fd00:0::1]')).toBe(true);
    expect(matcher.listsAddress('10.0.0.6')).toBe(false);
    expect(matcher.listsAddress('allowed.test')).toBe(false);
  });
});

describe('canonicalHost', () => {
  it.each([
    ['Example.COM.', 'example.com'],
    ['2130706433', '127.0.0.1'],
    ['0x7f.0.0.1', '127.0.0.1'],
    ['::1', '[::1]'],
    ['[0:0::1]', '[::1]'],
    ['bücher.de', 'xn--bcher-kva.de'],
  ])('%s → %s', (raw, canonical) => {
    expect(canonicalHost(raw)).toBe(canonical);
  });

  it.each(['', 'a b', 'a@b', 'a/b', 'a\\b', 'a:80', '[::1', 'a%2eb', '256.256.256.256'])('rejects %j', (raw) => {
    expect(canonicalHost(raw)).toBeUndefined();
  });
});

describe('isPublicSuffix', () => {
  it('treats every single label and every suffix of the Public Suffix List as public', () => {
    for (const name of ['com', 'test', 'localhost', 'co.uk', 'com.au', 'github.io', 'r2.dev', 'com.uy', 'blogspot.co.uk', 's3.us-east-1.amazonaws.com']) {
      expect(isPublicSuffix(name), name).toBe(true);
    }
    for (const name of ['example.com', 'example.co.uk', 'user.github.io', 'bucket.r2.dev', 'shop.test', 'amazonaws.example']) expect(isPublicSuffix(name), name).toBe(false);
  });
});

describe('ports in the allow-list', () => {
  it('parses an entry with a port, IPv6 in brackets', () => {
    expect(validateAllowList(['Shop.Test:8443', '*.cdn.test:443', '127.0.0.1:3000', '[::1]:8080', '::1'])).toEqual([
      { kind: 'host', host: 'shop.test', port: 8443 },
      { kind: 'subtree', base: 'cdn.test', port: 443 },
      { kind: 'address', address: '127.0.0.1', port: 3000 },
      { kind: 'address', address: '[::1]', port: 8080 },
      { kind: 'address', address: '[::1]' },
    ]);
  });

  it('limits a host listed with a port to that port; a bare host keeps any port', () => {
    const m = createHostMatcher(['shop.test:8443', 'any.test', '*.cdn.test:443', '127.0.0.1:3000']);
    expect(m.allowsUrl('https://shop.test:8443/a').ok).toBe(true);
    expect(m.allowsUrl('wss://SHOP.test.:8443/socket').ok).toBe(true);
    expect(m.allowsUrl('http://user:pw@shop.test:8443/').ok).toBe(true);
    for (const url of ['https://shop.test/', 'http://shop.test/', 'http://shop.test:6379/', 'ws://shop.test:8080/', 'https://shop.test:8444/']) {
      const verdict = m.allowsUrl(url);
      expect(verdict.ok, url).toBe(false);
      expect(verdict).toMatchObject({ reason: expect.stringMatching(/port/) });
    }
    expect(m.allowsUrl('http://any.test:6379/').ok).toBe(true);
    expect(m.allowsUrl('https://img.cdn.test/x.png').ok).toBe(true);
    expect(m.allowsUrl('https://img.cdn.test:8443/x.png').ok).toBe(false);
    expect(m.allowsUrl('http://127.0.0.1:3000/').ok).toBe(true);
    expect(m.allowsUrl('http://0x7f.1:3000/').ok).toBe(true);
    expect(m.allowsUrl('http://127.0.0.1:6379/').ok).toBe(false);
    expect(m.listsAddress('127.0.0.1', 3000)).toBe(true);
    expect(m.listsAddress('127.0.0.1', 6379)).toBe(false);
    expect(m.allowsUrl('file://shop.test:8443/etc/passwd').ok).toBe(false);
  });
});

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1',
    '0.0.0.0', '224.0.0.1', '255.255.255.255', '::', '::1', 'fe80::1', 'fd00:ec2::254', 'fc00::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', '64:ff9b::a00:1', '2002:c0a8:101::1', '::127.0.0.1',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('is false for things that are not addresses', () => {
    expect(isPublicAddress('example.com')).toBe(false);
  });
});

describe('the specification check uses the same parser', () => {
  it.each(['*.com', '*.r2.dev', '*.blogspot.co.uk', 'shop.test:0'])('refuses %j as invalid_specification', (entry) => {
    const error = specError(() => parseSpecification({ prompt: 'p', allowedDomains: ['ok.test', entry] }));
    expect(error.code).toBe('invalid_specification');
    expect(error.message).toContain(entry);
  });

  it('keeps an entry with a port', () => {
    expect(parseSpecification({ prompt: 'p', allowed_domains: [' shop.test:8443 '] }).allowedDomains).toEqual(['shop.test:8443']);
  });
});
