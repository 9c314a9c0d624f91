import { describe, expect, it } from 'vitest';
import { hashApiKey, newApiKey, newKeyRecord, storedKeyTag, type ApiKeyStore } from '../../src/local-service/api-keys.js';
import { createAuth, grantOf, LAST_USE_RESOLUTION_MS, LOGIN_LINK_MAX_TTL_MS, SESSION_TTL_MS, type Auth, type AuthRequest, type Credential, type SessionStore } from '../../src/local-service/auth.js';
import type { ApiKeyRecord } from '../../src/contract/access.js';

/** A request as the server hands it to auth: headers, and the cookies @fastify/cookie parsed. */
const request = (headers: Record<string, string>): AuthRequest => ({
  headers,
  cookies: Object.fromEntries((headers.cookie ?? '').split(';').filter((c) => c.includes('=')).map((c) => [c.trim().split('=')[0]!, c.trim().split('=').slice(1).join('=')])),
});
const cookieOf = (setCookie: string) => setCookie.split(';')[0]!;

/** The Redis store's behaviour in memory: records expire with their lifetime (read against `now`). */
function memoryStore(now: () => number = Date.now): SessionStore & { size(): number } {
  const records = new Map<string, { value: string; until: number }>();
  const live = (id: string) => {
    const r = records.get(id);
    if (r && r.until <= now()) records.delete(id);
    return records.get(id)?.value;
  };
  return {
    put: async (id, value, ttlMs) => void records.set(id, { value, until: now() + ttlMs }),
    get: async (id) => live(id),
    take: async (id) => {
      const value = live(id);
      records.delete(id);
      return value;
    },
    delete: async (id) => void records.delete(id),
    size: () => records.size,
  };
}

/** The Redis key store's behaviour in memory (names unique whatever their case). */
function memoryKeys(): ApiKeyStore & { uses: Map<string, string> } {
  const records = new Map<string, { record: ApiKeyRecord; hash: string }>();
  const uses = new Map<string, string>();
  return {
    uses,
    add: async (record, hash) => {
      const maker = /^k:(.+)$/.exec(record.made_by_tag ?? '')?.[1];
      if (maker !== undefined && !records.has(maker)) return 'maker_gone';
      if ([...records.values()].some((r) => r.record.name.toLowerCase() === record.name.toLowerCase())) return 'taken';
      records.set(record.id, { record, hash });
      return 'added';
    },
    byHash: async (hash) => [...records.values()].find((r) => r.hash === hash)?.record,
    byId: async (id) => records.get(id)?.record,
    list: async () => [...records.values()].map((r) => r.record),
    remove: async (id) => {
      const found = records.get(id);
      records.delete(id);
      return found?.record;
    },
    // Only the key itself: what a removal that stopped half-way leaves (auth must still refuse its descendants).
    removeTree: async (id) => {
      const found = records.get(id);
      records.delete(id);
      return found ? [found.record] : [];
    },
    markUsed: async (tag, at) => void uses.set(tag, at),
    lastUsed: async (tags) => tags.map((t) => uses.get(t) ?? null),
  };
}

async function keyCredential(auth: Auth, key: string): Promise<Credential> {
  return auth.check(request({ 'x-service-key': key }));
}

describe('local service sign-in', () => {
  const store = memoryStore();
  const keys = memoryKeys();
  const auth = createAuth({ bootstrapKeys: ['key-one', 'key-two'], keys, sessions: store, cookieName: () => 'ew_session_8080' });
  const grant = async () => grantOf(await keyCredential(auth, 'key-two'))!;

  it('takes any configured key, and a session until it expires', async () => {
    expect(await keyCredential(auth, 'key-two')).toMatchObject({ kind: 'key', identity: 'bootstrap-2' });
    expect(await keyCredential(auth, 'key-three')).toEqual({ kind: 'none' });
    const cookie = cookieOf(await auth.openSession(await grant()));
    expect(cookie).toMatch(/^ew_session_8080=[A-Za-z0-9_-]{43}$/);
    expect(await auth.check(request({ cookie }))).toMatchObject({ kind: 'session' });
    // A session that began a full lifetime ago has ended, whatever the store still holds.
    const old = cookieOf(await auth.openSession(await grant(), Date.now() - SESSION_TTL_MS - 1));
    expect(await auth.check(request({ cookie: old }))).toEqual({ kind: 'none' });
    // The cookie of another port's service is not ours.
    expect(await auth.check(request({ cookie: cookie.replace('_8080=', '_9090=') }))).toEqual({ kind: 'none' });
  });

  it('signing out ends the session on the server, for every copy of the cookie', async () => {
    const cookie = cookieOf(await auth.openSession(await grant()));
    const stolenCopy = request({ cookie });
    expect(await auth.check(stolenCopy)).toMatchObject({ kind: 'session' });
    await auth.endSession(request({ cookie }));
    expect(await auth.check(stolenCopy)).toEqual({ kind: 'none' });
  });

  it('ends sessions and links when their key is taken out of the list; a restart keeps them', async () => {
    const cookie = cookieOf(await auth.openSession(await grant()));
    const { token } = await auth.loginToken('#/executions/x', await grant());
    const later = createAuth({ bootstrapKeys: ['key-one'], keys, sessions: store, cookieName: () => 'ew_session_8080' });
    expect(await later.check(request({ cookie }))).toEqual({ kind: 'none' });
    // The same key at another position keeps its sessions; its name follows its position.
    const restarted = createAuth({ bootstrapKeys: ['key-two', 'key-one'], keys, sessions: store, cookieName: () => 'ew_session_8080' });
    expect(await restarted.check(request({ cookie }))).toMatchObject({ kind: 'session', identity: 'bootstrap-1' });
    expect(await later.redeem(token)).toBeUndefined();
  });

  it('redeems a login link once, for its route, until it expires', async () => {
    const now = Date.now();
    const { token, expiresAtMs } = await auth.loginToken('#/executions/abc', await grant(), 60_000, now);
    expect(expiresAtMs).toBe(now + 60_000);
    expect(await auth.redeem(token, now + 1_000)).toMatchObject({ route: '#/executions/abc' });
    // Single use: a second redemption (a link copied from a log, a history) opens nothing.
    expect(await auth.redeem(token, now + 2_000)).toBeUndefined();
    const { token: late } = await auth.loginToken('#/x', await grant(), 60_000, now);
    expect(await auth.redeem(late, now + 60_000)).toBeUndefined();
    // A session cookie is not a login token, nor the other way round.
    const session = cookieOf(await auth.openSession(await grant()));
    expect(await auth.redeem(session.split('=')[1]!)).toBeUndefined();
    const { token: other } = await auth.loginToken('#/y', await grant());
    expect(await auth.check(request({ cookie: `ew_session_8080=${other}` }))).toEqual({ kind: 'none' });
    await expect(auth.loginToken('https://evil.test/', await grant())).rejects.toThrow(/not a dashboard route/);
    expect((await auth.loginToken('#/x', await grant(), 10 * LOGIN_LINK_MAX_TTL_MS, now)).expiresAtMs).toBe(now + LOGIN_LINK_MAX_TTL_MS);
  });

  it('a stolen cookie cannot renew itself through login links: their sessions end when it does', async () => {
    let now = Date.now();
    const clocked = createAuth({ bootstrapKeys: ['key-one'], keys: memoryKeys(), sessions: memoryStore(() => now), cookieName: () => 'ew_session_8080' });
    const keyGrant = grantOf(await keyCredential(clocked, 'key-one'))!;
    let cookie = cookieOf(await clocked.openSession(keyGrant, now));
    const firstEnd = now + SESSION_TTL_MS;
    // Hour after hour, the holder of the cookie mints a link with it and redeems it.
    for (let hour = 1; hour <= 11; hour += 1) {
      now += 3_600_000;
      const credential = await clocked.check(request({ cookie }), now);
      expect(credential).toMatchObject({ kind: 'session', expiresAtMs: firstEnd });
      const { token } = await clocked.loginToken('#/executions', grantOf(credential)!, 60_000, now);
      const redeemed = await clocked.redeem(token, now);
      expect(redeemed?.grant.notAfterMs).toBe(firstEnd);
      const setCookie = await clocked.openSession(redeemed!.grant, now);
      expect(Number(/Max-Age=(\d+)/.exec(setCookie)?.[1])).toBe((firstEnd - now) / 1000);
      cookie = cookieOf(setCookie);
    }
    now = firstEnd + 1;
    expect(await clocked.check(request({ cookie }), now)).toEqual({ kind: 'none' });
  });
});

describe('keys made in the dashboard', () => {
  const setup = async () => {
    const keys = memoryKeys();
    const sessions = memoryStore();
    const auth = createAuth({ bootstrapKeys: ['boot'], keys, sessions, cookieName: () => 'ew_session_8080' });
    const key = newApiKey();
    const record = newKeyRecord('ci runner', 'operator', { tag: auth.bootstrap[0]!.tag, shown: 'bootstrap-1' });
    expect(await keys.add(record, hashApiKey(key))).toBe('added');
    return { keys, sessions, auth, key, record };
  };

  it('carry the role they were made with; the keys of API_KEYS have both, a session is an operator\'s', async () => {
    const { auth, keys, key } = await setup();
    const worker = newApiKey();
    expect(await keys.add(newKeyRecord('worker 1', 'worker', { tag: auth.bootstrap[0]!.tag, shown: 'bootstrap-1' }), hashApiKey(worker))).toBe('added');
    expect(await keyCredential(auth, worker)).toMatchObject({ kind: 'key', identity: 'worker 1', roles: ['worker'] });
    expect(await keyCredential(auth, key)).toMatchObject({ kind: 'key', roles: ['operator'] });
    expect(await keyCredential(auth, 'boot')).toMatchObject({ kind: 'key', roles: ['operator', 'worker'] });
    const cookie = (await auth.openSession({ keyTag: auth.bootstrap[0]!.tag })).split(';')[0]!;
    expect(await auth.check(request({ cookie }))).toMatchObject({ kind: 'session', roles: ['operator'] });
  });

  it('are honoured only while every key up their chain of makers is: a key made with a revoked key, or with a key of API_KEYS taken out, is refused', async () => {
    const { auth, keys, sessions, key, record } = await setup();
    // ci runner (made with boot) → child → grandchild.
    const child = newApiKey();
    const childRecord = newKeyRecord('child', 'operator', { tag: storedKeyTag(record.id), shown: record.id });
    expect(await keys.add(childRecord, hashApiKey(child))).toBe('added');
    const grandchild = newApiKey();
    expect(await keys.add(newKeyRecord('grandchild', 'worker', { tag: storedKeyTag(childRecord.id), shown: childRecord.id }), hashApiKey(grandchild))).toBe('added');
    const childSession = (await auth.openSession({ keyTag: storedKeyTag(childRecord.id) })).split(';')[0]!;
    expect((await keyCredential(auth, grandchild)).kind).toBe('key');
    expect((await auth.check(request({ cookie: childSession }))).kind).toBe('session');

    // The key of API_KEYS at the root taken out (a restart without it): the whole chain is refused.
    const restarted = createAuth({ bootstrapKeys: ['other'], keys, sessions, cookieName: () => 'ew_session_8080' });
    for (const k of [key, child, grandchild]) expect(await keyCredential(restarted, k)).toEqual({ kind: 'none' });

    // ci runner revoked (this store removes only the key itself): its descendants are refused all the same.
    await keys.removeTree(record.id);
    expect(await keyCredential(auth, child)).toEqual({ kind: 'none' });
    expect(await keyCredential(auth, grandchild)).toEqual({ kind: 'none' });
    expect(await auth.check(request({ cookie: childSession }))).toEqual({ kind: 'none' });
    // Nor can a key be made with a revoked maker.
    expect(await keys.add(newKeyRecord('late', 'operator', { tag: storedKeyTag(record.id), shown: record.id }), hashApiKey(newApiKey()))).toBe('maker_gone');
  });

  it('are 256 random bits behind a prefix, stored as their SHA-256 only', () => {
    const key = newApiKey();
    expect(key).toMatch(/^ewk_[A-Za-z0-9_-]{43}$/);
    expect(newApiKey()).not.toBe(key);
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toContain(key.slice(4));
  });

  it('sign requests in under their name, and the sessions they open too', async () => {
    const { auth, key } = await setup();
    const credential = await keyCredential(auth, key);
    expect(credential).toMatchObject({ kind: 'key', identity: 'ci runner' });
    const cookie = cookieOf(await auth.openSession(grantOf(credential)!));
    expect(await auth.check(request({ cookie }))).toMatchObject({ kind: 'session', identity: 'ci runner' });
    // A key that is not one, even with the prefix, is no credential.
    expect(await keyCredential(auth, newApiKey())).toEqual({ kind: 'none' });
  });

  it('once revoked, are refused at once, with every session and login link they made', async () => {
    const { keys, auth, key, record } = await setup();
    const grant = grantOf(await keyCredential(auth, key))!;
    const cookie = cookieOf(await auth.openSession(grant));
    const { token } = await auth.loginToken('#/executions', grant);
    await keys.remove(record.id);
    expect(await keyCredential(auth, key)).toEqual({ kind: 'none' });
    expect(await auth.check(request({ cookie }))).toEqual({ kind: 'none' });
    expect(await auth.redeem(token)).toBeUndefined();
  });

  it('judge a request that carries a key by that key alone, whatever cookie rides along', async () => {
    const { auth } = await setup();
    const cookie = cookieOf(await auth.openSession(grantOf(await keyCredential(auth, 'boot'))!));
    expect(await auth.check(request({ cookie, 'x-service-key': 'wrong' }))).toEqual({ kind: 'none' });
    expect(await auth.check(request({ cookie }))).toMatchObject({ kind: 'session', identity: 'bootstrap-1' });
  });

  it('record their last use, at most once a minute per key', async () => {
    const { keys, auth, key, record } = await setup();
    const now = Date.now();
    await auth.check(request({ 'x-service-key': key }), now);
    const tag = `k:${record.id}`;
    expect(keys.uses.get(tag)).toBe(new Date(now).toISOString());
    await auth.check(request({ 'x-service-key': key }), now + LAST_USE_RESOLUTION_MS - 1);
    expect(keys.uses.get(tag)).toBe(new Date(now).toISOString());
    await auth.check(request({ 'x-service-key': key }), now + LAST_USE_RESOLUTION_MS);
    expect(keys.uses.get(tag)).toBe(new Date(now + LAST_USE_RESOLUTION_MS).toISOString());
  });
});
