import { describe, expect, it } from 'vitest';

import { globMatch, parseHostRules } from '../../src/browser/host-rules.js';

describe('parseHostRules', () => {
  it('parses MAP and EXCLUDE rules, comma-separated, with extra spaces', () => {
    const rules = parseHostRules(' MAP allowed.test 127.0.0.1 , MAP *.shop.test 127.0.0.1:8080,EXCLUDE keep.shop.test, map v6.test [::1]:81, MAP gone.test ~NOTFOUND');
    expect(rules.rules).toEqual([
      { kind: 'map', pattern: 'allowed.test', target: { kind: 'host', host: '127.0.0.1' } },
      { kind: 'map', pattern: '*.shop.test', target: { kind: 'host', host: '127.0.0.1', port: 8080 } },
      { kind: 'exclude', pattern: 'keep.shop.test' },
      { kind: 'map', pattern: 'v6.test', target: { kind: 'host', host: '::1', port: 81 } },
      { kind: 'map', pattern: 'gone.test', target: { kind: 'notfound' } },
    ]);
  });

  it('treats an absent or empty value as no rules', () => {
    expect(parseHostRules(undefined).rules).toEqual([]);
    expect(parseHostRules('').rules).toEqual([]);
    expect(parseHostRules(' , ').rules).toEqual([]);
  });

  it.each(['MAP allowed.test', 'MAP a b c', 'ALIAS a b', 'EXCLUDE', 'MAP a 127.0.0.1:99999', 'MAP a [zz]:1', 'MAP a 1.2.3.4:'])('rejects %j', (text) => {
    expect(() => parseHostRules(text)).toThrow(/BROWSER_HOST_RULES/);
  });

  it('looks names up as Chromium does: EXCLUDE wins, then the first matching MAP', () => {
    const rules = parseHostRules('MAP allowed.test 127.0.0.1,MAP *.shop.test 10.0.0.2:8080,EXCLUDE keep.shop.test,MAP * ~NOTFOUND');
    expect(rules.lookup('allowed.test')).toEqual({ kind: 'mapped', host: '127.0.0.1' });
    expect(rules.lookup('ALLOWED.TEST')).toEqual({ kind: 'mapped', host: '127.0.0.1' });
    expect(rules.lookup('a.shop.test')).toEqual({ kind: 'mapped', host: '10.0.0.2', port: 8080 });
    // `*.shop.test` is a glob: it needs something before the dot.
    expect(rules.lookup('shop.test')).toEqual({ kind: 'notfound' });
    expect(rules.lookup('keep.shop.test')).toEqual({ kind: 'none' });
    expect(rules.lookup('evil.test')).toEqual({ kind: 'notfound' });
    expect(parseHostRules('MAP allowed.test 127.0.0.1').lookup('evil.test')).toEqual({ kind: 'none' });
  });

  it('formats the rules back, dropping EXCLUDE unless asked', () => {
    const rules = parseHostRules('MAP a.test 127.0.0.1,EXCLUDE b.test,MAP c.test [::1]:80,MAP d.test ~NOTFOUND');
    expect(rules.format()).toBe('MAP a.test 127.0.0.1,MAP c.test [::1]:80,MAP d.test ~NOTFOUND');
    expect(rules.format({ withExcludes: true })).toBe('MAP a.test 127.0.0.1,EXCLUDE b.test,MAP c.test [::1]:80,MAP d.test ~NOTFOUND');
  });
});

describe('globMatch', () => {
  it.each([
    ['a.test', 'a.test', true],
    ['a.test', '*', true],
    ['x.a.test', '*.a.test', true],
    ['a.test', '*.a.test', false],
    ['xa.test', '*.a.test', false],
    ['a.test', 'a.tes?', true],
    ['a.test', 'a.te', false],
    ['abcabd', '*abd', true],
    ['aaa', 'a*a*a', true],
    ['ab', 'a*a', false],
  ])('%s ~ %s → %s', (text, pattern, expected) => {
    expect(globMatch(text, pattern)).toBe(expected);
  });
});
