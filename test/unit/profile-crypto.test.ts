import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { allowedState } from '../../src/browser/profile-state.js';
import { createHostMatcher } from '../../src/browser/host-matcher.js';
import type { StorageState } from '../../src/contract/storage-state.js';
import { ConfigError } from '../../src/config/env.js';
import { loadConfig } from '../../src/config/schema.js';
import { profileIdProblem } from '../../src/contract/profile.js';
import { openProfile, parseProfileKeys, readProfileHeader, sealProfile } from '../../src/domain/profile-crypto.js';
import { parseSpecification } from '../../src/domain/specification.js';

const key = () => randomBytes(32).toString('base64');
const meta = { savedAt: '2026-01-01T00:00:00.000Z', hosts: ['app.test'], cookies: 1, origins: 0 };
const STATE = { cookies: [{ name: 'sid', value: 'SESSION-VALUE-123456' }], origins: [] };

describe('profile keys (PROFILE_KEYS)', () => {
  it('parses keyId:base64key entries: the first encrypts, all decrypt', () => {
    const [a, b] = [key(), key()];
    const ring = parseProfileKeys(`k2:${a}, k1:${b}`);
    expect(ring.current.id).toBe('k2');
    expect([...ring.byId.keys()]).toEqual(['k2', 'k1']);
    expect(ring.byId.get('k1')).toEqual(Buffer.from(b, 'base64'));
  });

  it.each([
    ['', /at least one/],
    ['nokey', /entry 1: must be keyId:base64key/],
    [`k1:${randomBytes(16).toString('base64')}`, /key "k1": must be 32 bytes \(44 base64 characters\), it is 16 bytes/],
    ['k1:not base64!', /key "k1": is not base64/],
    [`k1:${key()},k1:${key()}`, /key "k1": is listed twice/],
  ])('refuses %j with a message that names the entry, never its key', (text, message) => {
    expect(() => parseProfileKeys(text)).toThrow(message);
  });

  it('is validated at start without echoing the value', () => {
    const secret = randomBytes(16).toString('base64');
    let error: unknown;
    try {
      loadConfig({ PROFILE_KEYS: `k1:${secret}`, PROFILE_MAX_BYTES: '10' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('PROFILE_KEYS=(secret, not shown): key "k1": must be 32 bytes');
    expect(message).toContain('PROFILE_MAX_BYTES="10": must be at least 1024');
    expect(message).not.toContain(secret);
    expect(loadConfig({}).PROFILE_MAX_BYTES).toBe(5 * 1024 * 1024);
    expect(loadConfig({}).PROFILE_KEYS).toBeUndefined();
  });
});

describe('profile blobs (AES-256-GCM)', () => {
  const ring = parseProfileKeys(`k1:${key()}`);

  it('round-trips, with a fresh IV each save and no value in the clear', () => {
    const one = sealProfile('acme.crm', STATE, ring, meta);
    const two = sealProfile('acme.crm', STATE, ring, meta);
    expect(one.equals(two)).toBe(false);
    expect(one.toString('latin1')).not.toContain('SESSION-VALUE');
    const opened = openProfile('acme.crm', one, ring);
    expect(opened).toMatchObject({ ok: true, state: STATE, header: { kid: 'k1', hosts: ['app.test'], cookies: 1 } });
  });

  it('does not open altered bytes, another id, or a key it does not hold', () => {
    const blob = sealProfile('acme.crm', STATE, ring, meta);
    const altered = Buffer.from(blob);
    altered[altered.length - 3]! ^= 0x01;
    expect(openProfile('acme.crm', altered, ring)).toMatchObject({ ok: false, reason: expect.stringMatching(/does not authenticate/) });
    expect(openProfile('other.crm', blob, ring)).toMatchObject({ ok: false });
    // The clear header is bound too: a blob claiming other hosts does not open.
    const relabelled = Buffer.from(blob.toString('latin1').replace('app.test', 'bpp.test'), 'latin1');
    expect(openProfile('acme.crm', relabelled, ring)).toMatchObject({ ok: false });
    expect(openProfile('acme.crm', blob, parseProfileKeys(`k1:${key()}`))).toMatchObject({ ok: false, reason: expect.stringMatching(/does not authenticate/) });
    expect(openProfile('acme.crm', blob, parseProfileKeys(`k9:${key()}`))).toMatchObject({ ok: false, reason: expect.stringMatching(/key "k1", which PROFILE_KEYS does not hold/) });
    expect(openProfile('acme.crm', Buffer.from('plain text'), ring)).toMatchObject({ ok: false, reason: 'not a profile blob' });
  });

  it('rotates: a blob of the old key opens while it is listed; the next save uses the new key', () => {
    const old = parseProfileKeys(`k1:${ring.byId.get('k1')!.toString('base64')}`);
    const blob = sealProfile('p', STATE, old, meta);
    const rotated = parseProfileKeys(`k2:${key()},k1:${ring.byId.get('k1')!.toString('base64')}`);
    expect(openProfile('p', blob, rotated)).toMatchObject({ ok: true, state: STATE });
    const again = sealProfile('p', STATE, rotated, meta);
    expect(readProfileHeader(again)).toMatchObject({ ok: true, header: { kid: 'k2' } });
    // With the old key retired, the new blob still opens and the old one no longer does.
    const retired = parseProfileKeys(`k2:${rotated.byId.get('k2')!.toString('base64')}`);
    expect(openProfile('p', again, retired)).toMatchObject({ ok: true });
    expect(openProfile('p', blob, retired)).toMatchObject({ ok: false });
  });
});

describe('profile ids and states', () => {
  it('accepts letters, digits, ".", "_", "-" up to 128, in either spelling of the field', () => {
    expect(profileIdProblem('tenant-42.crm_main')).toBeUndefined();
    for (const bad of ['', 'a/b', '..', '.', 'x'.repeat(129), 'naïve', 'a b']) expect(profileIdProblem(bad)).toBeDefined();
    expect(parseSpecification({ prompt: 'p', allowed_domains: ['a.test'], profile: 't1.crm' }).profile).toBe('t1.crm');
    expect(() => parseSpecification({ prompt: 'p', allowedDomains: ['a.test'], profile: '../x' })).toThrow(/profile: must be 1 to 128 letters/);
    expect(() => parseSpecification({ prompt: 'p', allowedDomains: ['a.test'], profile: 7 })).toThrow(/profile: must be a string/);
  });

  it('keeps cookies and origins of allowed hosts only', () => {
    const cookie = (domain: string) => ({ name: 'c', value: 'v', domain, path: '/', expires: -1, httpOnly: false, secure: false, sameSite: 'Lax' as const });
    const state: StorageState = {
      cookies: [cookie('app.test'), cookie('.app.test'), cookie('evil.test'), cookie('.test'), cookie('sub.app.test'), cookie('x.wide.test'), cookie('wide.test')],
      origins: [
        { origin: 'http://app.test:8080', localStorage: [] },
        { origin: 'http://evil.test', localStorage: [] },
        { origin: 'https://a.wide.test', localStorage: [] },
      ],
    };
    const kept = allowedState(state, createHostMatcher(['app.test', '*.wide.test']));
    expect(kept.cookies.map((c) => c.domain)).toEqual(['app.test', '.app.test', 'x.wide.test', 'wide.test']);
    expect(kept.origins.map((o) => o.origin)).toEqual(['http://app.test:8080', 'https://a.wide.test']);
  });
});
