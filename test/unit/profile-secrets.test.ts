import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StorageState } from '../../src/contract/storage-state.js';
import { profileSecrets } from '../../src/domain/profile-secrets.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { formatConsole, formatNetwork } from '../../src/toolset/page-logs.js';

/**
 * A saved profile's values are secrets wherever a page shows them to the model
 * (docs/profiles.md): also a token inside a structured value, such as JSON in `localStorage`
 * or a cookie holding percent-encoded JSON.
 */

const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJl';
const refresh = `rt_${randomBytes(12).toString('hex')}`;
const sid = `sid-${randomBytes(8).toString('hex')}`;
const state: StorageState = {
  cookies: [{ name: 'prefs', value: encodeURIComponent(`j:${JSON.stringify({ sid, theme: 'dark' })}`), domain: 'app.test', path: '/', expires: -1, httpOnly: false, secure: false, sameSite: 'Lax' }],
  origins: [{ origin: 'http://app.test', localStorage: [{ name: 'auth', value: JSON.stringify({ accessToken: token, session: { refresh }, user: { name: 'Ann Lee' } }) }] }],
};

describe('profile values inside structured values', () => {
  it('a token inside a JSON localStorage value, or a percent-encoded JSON cookie, is redacted from read_console and read_network', () => {
    const vault = createSecretVault(undefined, undefined, profileSecrets(state));
    const consoleText = vault.redact(formatConsole([{ level: 'log', atMs: 0, text: `refreshing with ${refresh}; bearer-less token=${token.slice(0, 20)}` }, { level: 'info', atMs: 1, text: `session ${sid}` }], 10_000));
    const networkText = vault.redact(formatNetwork([{ method: 'GET', atMs: 0, url: `http://app.test/api/me?t=${encodeURIComponent(token)}&s=${sid}`, status: 200 }], 10_000));
    for (const text of [consoleText, networkText]) {
      for (const value of [token.slice(0, 20), refresh, sid]) expect(text).not.toContain(value);
    }
    expect(consoleText).toContain('[REDACTED]');
    // Ordinary words of the same values are not secrets.
    expect(profileSecrets(state)).not.toContain('Ann Lee');
    expect(profileSecrets(state)).not.toContain('dark');
  });

  it('for any JSON value stored, every string of 8 characters or more without spaces in it is a secret', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (stored) => {
        const value = JSON.stringify(stored);
        const secrets = profileSecrets({ cookies: [], origins: [{ origin: 'http://app.test', localStorage: [{ name: 'k', value }] }] });
        const strings: string[] = [];
        const walk = (v: unknown): void => {
          if (typeof v === 'string') strings.push(v);
          else if (v && typeof v === 'object') for (const item of Object.values(v)) walk(item);
        };
        walk(stored);
        for (const s of strings.filter((s) => s.length >= 8 && !/\s/.test(s))) expect(secrets).toContain(s);
        if (value.length >= 8) expect(secrets).toContain(value);
      }),
    );
  });

  it('a token after a scheme word (`Bearer eyJ…`) is a secret on its own, and the words around it are not', () => {
    const stored = { authorization: `Bearer ${token}`, greeting: 'Welcome back to the dashboard' };
    const secrets = profileSecrets({ cookies: [], origins: [{ origin: 'http://app.test', localStorage: [{ name: 'auth', value: JSON.stringify(stored) }] }] });
    const vault = createSecretVault(undefined, undefined, secrets);
    expect(vault.redact(`Authorization: Bearer ${token}`)).not.toContain(token);
    expect(secrets).not.toContain('Bearer');
    expect(secrets).not.toContain('dashboard');
  });

  it('a token stored after more ids than the bound takes is still found: the most token-like are taken, not the first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 501, max: 900 }), fc.integer({ min: 0, max: 2 }), (ids, place) => {
        const cache = Array.from({ length: ids }, (_, i) => `item-${String(i).padStart(6, '0')}`);
        const stored = place === 0 ? { accessToken: token, cache } : place === 1 ? { cache, accessToken: token } : { cache: [...cache.slice(0, 300), token, ...cache.slice(300)] };
        const secrets = profileSecrets({ cookies: [], origins: [{ origin: 'http://app.test', localStorage: [{ name: 'app', value: JSON.stringify(stored) }] }] });
        expect(secrets).toContain(token);
        expect(createSecretVault(undefined, undefined, secrets).redact(`Your API token: ${token}`)).not.toContain(token);
      }),
      { numRuns: 20 },
    );
  });

  it('a token under a key that names a credential is kept however much else the profile holds (600 long presigned URLs before it)', () => {
    const urls = Array.from({ length: 600 }, (_, i) => `https://bucket.s3.test/f/${i}?X-Amz-Signature=${'Ab12'.repeat(270)}`);
    const auth0 = JSON.stringify({ body: { access_token: token, expires_in: 86400 } });
    const secrets = profileSecrets({ cookies: [], origins: [{ origin: 'http://app.test', localStorage: [{ name: 'cache', value: JSON.stringify({ urls }) }, { name: '@@auth0spajs@@', value: auth0 }] }] });
    expect(secrets).toContain(token);
  });
});
