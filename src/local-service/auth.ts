import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import { storedGrant, type ApiKeyRecord, type KeyRole, type StoredGrant } from '../contract/access.js';
import { bootstrapName, hashApiKey, KEY_PREFIX, STORED_TAG, storedKeyTag, type ApiKeyStore } from './api-keys.js';

/** What auth reads of a request: its headers, and its cookies as @fastify/cookie parsed them. */
export interface AuthRequest {
  headers: http.IncomingHttpHeaders;
  cookies?: Record<string, string | undefined>;
}

/**
 * Who may use the local service (docs/operations.md#access): a holder of an API key, by
 * `X-Service-Key` — one of `API_KEYS` (the bootstrap) or one made in the dashboard (api-keys.ts)
 * — or a browser holding a session cookie that a key holder obtained, by signing in on the
 * dashboard with the key or by following a login link. Which routes take which is declared on
 * each route (access.ts).
 *
 * A credential carries an identity: the name of the key it comes from (`bootstrap-1`, … for the
 * `API_KEYS` entries by position; the chosen name for a dashboard key), for a session the name of
 * the key that opened it. An answer's `by` and the request log record it.
 *
 * Sessions and login links live on the server (a `SessionStore`, Redis in the service): the
 * cookie and the link carry only a random id, stored as its SHA-256. Each records the key it was
 * made with (as a tag, never the key), and is honoured only while that key is: taking a key out
 * of API_KEYS, or revoking a dashboard key, ends every session and link made with it at once.
 * Signing out ends the session for whoever holds a copy of the cookie, and a login link works
 * once. A session ends at a fixed time that nothing extends: a login link minted with a
 * session's cookie opens a session that ends when the minting one does, so a stolen cookie
 * cannot renew itself.
 *
 * The cookie is HttpOnly (page scripts never see it), SameSite=Strict (other sites' pages cannot
 * send it) and named after the service's port: browsers share a host's cookies between its
 * ports, and a distinct name keeps services on other ports of the host from reading or
 * overwriting this one by name (they can still read it if they run on that host: see the doc).
 */

/** How long a dashboard session lasts, from sign-in; never extended. */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** How long a login link works, unless asked otherwise (at most LOGIN_LINK_MAX_TTL_MS). */
export const LOGIN_LINK_TTL_MS = 15 * 60_000;
export const LOGIN_LINK_MAX_TTL_MS = 24 * 3_600_000;
/** A key's last use is written at most this often per key and process (a write per request is waste). */
export const LAST_USE_RESOLUTION_MS = 60_000;

/** The dashboard routes a login link may open (a hash route: no open redirect to elsewhere). */
const ROUTE = /^#\/[A-Za-z0-9/_.-]*$/;

/**
 * `keyTag` names the key a credential comes from (a digest of a bootstrap key, the id of a
 * dashboard key; never the key); `identity` is that key's name; `roles` what it may do (a
 * bootstrap key both, a dashboard key the role it was made with, a session an operator's).
 */
export type Credential =
  | { kind: 'key'; keyTag: string; identity: string; roles: readonly KeyRole[] }
  | { kind: 'session'; keyTag: string; identity: string; expiresAtMs: number; roles: readonly KeyRole[] }
  | { kind: 'none' };

/** What a key of API_KEYS may do: everything. */
export const BOOTSTRAP_ROLES: readonly KeyRole[] = ['operator', 'worker'];
/** What a dashboard session may do: it is an operator's (only an operator's key signs in). */
export const SESSION_ROLES: readonly KeyRole[] = ['operator'];
/**
 * How many makers up a key's chain are looked at (a key made with a key made with …): a chain
 * longer than this is not honoured. Each level is one Redis read, on each request.
 */
export const MAX_KEY_CHAIN = 16;

/** Server-side records with a lifetime. `take` reads and deletes in one step. */
export interface SessionStore {
  put(id: string, value: string, ttlMs: number): Promise<void>;
  get(id: string): Promise<string | undefined>;
  take(id: string): Promise<string | undefined>;
  delete(id: string): Promise<void>;
}

export interface Auth {
  /** The session cookie's name (`ew_session_<port>`). */
  readonly cookieName: string;
  /** The `API_KEYS` entries as the key list shows them: their names and tags, never the keys. */
  readonly bootstrap: readonly { name: string; tag: string }[];
  /**
   * The request's credential. A request that carries `X-Service-Key` is judged by that key alone
   * (a wrong or revoked key is no credential, whatever cookie rides along); one without it, by
   * its session cookie.
   */
  check(req: AuthRequest, nowMs?: number): Promise<Credential>;
  /** Opens a session for `grant`, ending at its `notAfterMs` at the latest: the `Set-Cookie` value. */
  openSession(grant: Grant, nowMs?: number): Promise<string>;
  /** Ends the request's session on the server (whoever else holds the cookie). */
  endSession(req: AuthRequest): Promise<void>;
  /** A `Set-Cookie` value clearing the cookie in this browser. */
  clearCookie(): string;
  /**
   * A single-use login token opening `route`, valid for `ttlMs`, made by `grant`. With `binder`
   * (the secret of the asking browser's link cookie, see `linkCookie`), only a request carrying
   * that secret redeems it.
   */
  loginToken(route: string, grant: Grant, ttlMs?: number, nowMs?: number, binder?: string): Promise<{ token: string; expiresAtMs: number }>;
  /**
   * Redeems a login token once: its route and grant; undefined when unknown, used, expired, its
   * key is gone, or it is bound to a browser and `req` does not carry that browser's link
   * cookie (a refused try does not use the link up).
   */
  redeem(token: string, nowMs?: number, req?: AuthRequest): Promise<{ route: string; grant: Grant } | undefined>;
  /** The asking browser's link secret: the one its link cookie holds, else a new one; and the `Set-Cookie` value keeping it. */
  linkCookie(req: AuthRequest): { binder: string; cookie: string };
}

export interface AuthOptions {
  /** `API_KEYS`: secrets, held in memory as digests only. */
  bootstrapKeys: readonly string[];
  /** The dashboard's keys. */
  keys: ApiKeyStore;
  sessions: SessionStore;
  cookieName?: () => string;
}

/** What a session or link was made with: which key (as a tag), and the latest end it may have. */
export interface Grant {
  keyTag: string;
  notAfterMs?: number;
}

type Stored = StoredGrant;

export function isDashboardRoute(route: string): boolean {
  return ROUTE.test(route) && route.length <= 300;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
/** A bootstrap key's tag in stored records: a digest, never the key. */
const tagOf = (key: string): string => createHash('sha256').update(`execution-worker local service key\0${key}`).digest('base64url');
const newId = (): string => randomBytes(32).toString('base64url');
const ID = /^[A-Za-z0-9_-]{43}$/;

export function createAuth(opts: AuthOptions): Auth {
  const { keys: keyStore, sessions: store } = opts;
  const cookieName = opts.cookieName ?? (() => 'ew_session');
  const bootstrap = opts.bootstrapKeys.map((key, i) => ({ digest: digest(key), tag: tagOf(key), name: bootstrapName(i) }));
  const bootstrapByTag = new Map(bootstrap.map((b) => [b.tag, b.name]));
  const lastWrite = new Map<string, number>();

  // Compares digests in constant time, so response timing does not leak a key's prefix.
  const bootstrapOf = (candidate: string): { tag: string; name: string } | undefined => {
    const d = digest(candidate);
    let found: { tag: string; name: string } | undefined;
    for (const known of bootstrap) if (timingSafeEqual(d, known.digest)) found = known;
    return found;
  };

  /**
   * Whether a dashboard key's makers are all live, up its chain: the key it was made with (not
   * revoked), the key that one was made with, … up to a key of API_KEYS still listed there.
   * Revoking a key (or taking it out of API_KEYS) so revokes every key made with it, by
   * construction, whatever a removal left behind.
   */
  const makersLive = async (record: ApiKeyRecord): Promise<boolean> => {
    let at = record;
    for (let depth = 0; depth < MAX_KEY_CHAIN; depth += 1) {
      const tag = at.made_by_tag;
      // A key made before its maker was recorded stands alone.
      if (tag === undefined) return true;
      if (bootstrapByTag.has(tag)) return true;
      const id = STORED_TAG.exec(tag)?.[1];
      const maker = id === undefined ? undefined : await keyStore.byId(id);
      if (!maker) return false;
      at = maker;
    }
    return false;
  };

  /** A stored key's credential fields while it and its makers are live. */
  const liveStored = async (record: ApiKeyRecord | undefined): Promise<{ tag: string; name: string; roles: readonly KeyRole[] } | undefined> =>
    record && (await makersLive(record)) ? { tag: storedKeyTag(record.id), name: record.name, roles: [record.role] } : undefined;

  /** The key's tag, name and roles while it is live. A stored key is found by its hash: a lookup that leaks nothing useful by its timing. */
  const keyOf = async (candidate: string): Promise<{ tag: string; name: string; roles: readonly KeyRole[] } | undefined> => {
    const known = bootstrapOf(candidate);
    if (known) return { ...known, roles: BOOTSTRAP_ROLES };
    if (!candidate.startsWith(KEY_PREFIX)) return undefined;
    return liveStored(await keyStore.byHash(hashApiKey(candidate)));
  };

  /** The name of the key a tag names, while that key is live (in API_KEYS, or not revoked, nor any of its makers). */
  const liveName = async (tag: string): Promise<string | undefined> => {
    const name = bootstrapByTag.get(tag);
    if (name !== undefined) return name;
    const id = STORED_TAG.exec(tag)?.[1];
    return id === undefined ? undefined : (await liveStored(await keyStore.byId(id)))?.name;
  };

  /** Records a use, at most once a LAST_USE_RESOLUTION_MS per key; a failed write never fails the request. */
  const touch = (tag: string, nowMs: number): void => {
    if (nowMs - (lastWrite.get(tag) ?? Number.NEGATIVE_INFINITY) < LAST_USE_RESOLUTION_MS) return;
    lastWrite.set(tag, nowMs);
    keyStore.markUsed(tag, new Date(nowMs).toISOString()).catch(() => lastWrite.delete(tag));
  };

  const read = async (kind: 's' | 'l', id: string | undefined, take: boolean, nowMs: number): Promise<(Stored & { identity: string }) | undefined> => {
    if (id === undefined || !ID.test(id)) return undefined;
    const storeId = `${kind}:${digest(id).toString('base64url')}`;
    const raw = take ? await store.take(storeId) : await store.get(storeId);
    if (raw === undefined) return undefined;
    const read = storedGrant.safeParse(JSON.parse(raw));
    // A record of another shape opens nothing (contract/access.ts).
    if (!read.success) return undefined;
    const stored = read.data;
    // The store's own expiry is the first guard; the time and the key are checked again here.
    if (!(stored.expiresAtMs > nowMs)) return undefined;
    const identity = await liveName(stored.keyTag);
    return identity === undefined ? undefined : { ...stored, identity };
  };

  const write = async (kind: 's' | 'l', record: Stored, nowMs: number): Promise<string> => {
    const id = newId();
    await store.put(`${kind}:${digest(id).toString('base64url')}`, JSON.stringify(record), Math.max(1, record.expiresAtMs - nowMs));
    return id;
  };

  const cookieFrom = (req: AuthRequest): string | undefined => req.cookies?.[cookieName()];
  const linkCookieName = (): string => `${cookieName()}_link`;
  /** Whether a link's binder (a digest, or none for a link made with a key) is the one `req`'s link cookie holds. */
  const binderMatches = (binder: string | undefined, req: AuthRequest | undefined): boolean => {
    if (binder === undefined) return true;
    const held = req?.cookies?.[linkCookieName()];
    if (held === undefined || !ID.test(held)) return false;
    return timingSafeEqual(digest(held), Buffer.from(binder, 'base64url'));
  };

  return {
    get cookieName() {
      return cookieName();
    },
    bootstrap: bootstrap.map(({ name, tag }) => ({ name, tag })),
    async check(req, nowMs = Date.now()) {
      const presented = headerValue(req, 'x-service-key');
      if (presented !== undefined && presented !== '') {
        const key = await keyOf(presented);
        if (!key) return { kind: 'none' };
        touch(key.tag, nowMs);
        return { kind: 'key', keyTag: key.tag, identity: key.name, roles: key.roles };
      }
      const session = await read('s', cookieFrom(req), false, nowMs);
      if (!session) return { kind: 'none' };
      touch(session.keyTag, nowMs);
      return { kind: 'session', keyTag: session.keyTag, identity: session.identity, expiresAtMs: session.expiresAtMs, roles: SESSION_ROLES };
    },
    async openSession(grant, nowMs = Date.now()) {
      const expiresAtMs = Math.min(nowMs + SESSION_TTL_MS, grant.notAfterMs ?? Number.POSITIVE_INFINITY);
      const id = await write('s', { keyTag: grant.keyTag, expiresAtMs }, nowMs);
      const maxAge = Math.max(1, Math.floor((expiresAtMs - nowMs) / 1000));
      return `${cookieName()}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}`;
    },
    async endSession(req) {
      const id = cookieFrom(req);
      if (id !== undefined && ID.test(id)) await store.delete(`s:${digest(id).toString('base64url')}`);
    },
    linkCookie(req) {
      const held = req.cookies?.[linkCookieName()];
      const binder = held !== undefined && ID.test(held) ? held : newId();
      // Lax, not Strict: a link opened from a mail or a chat is a top-level navigation from another site.
      // Path=/login: sent with nothing else.
      return { binder, cookie: `${linkCookieName()}=${binder}; Path=/login; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(LOGIN_LINK_MAX_TTL_MS / 1000)}` };
    },
    clearCookie() {
      return `${cookieName()}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
    },
    async loginToken(route, grant, ttlMs = LOGIN_LINK_TTL_MS, nowMs = Date.now(), binder) {
      if (!isDashboardRoute(route)) throw new Error(`not a dashboard route: ${route}`);
      const expiresAtMs = nowMs + Math.min(Math.max(1_000, ttlMs), LOGIN_LINK_MAX_TTL_MS);
      const record: Stored = {
        keyTag: grant.keyTag, expiresAtMs, route,
        ...(grant.notAfterMs === undefined ? {} : { notAfterMs: grant.notAfterMs }),
        ...(binder === undefined ? {} : { binder: digest(binder).toString('base64url') }),
      };
      return { token: await write('l', record, nowMs), expiresAtMs };
    },
    async redeem(token, nowMs = Date.now(), req) {
      // A bound link is checked before it is taken: another browser's try neither redeems nor uses it up.
      const peek = await read('l', token, false, nowMs);
      if (!peek || !binderMatches(peek.binder, req)) return undefined;
      const stored = await read('l', token, true, nowMs);
      if (!stored?.route || !isDashboardRoute(stored.route) || !binderMatches(stored.binder, req)) return undefined;
      const grant: Grant = stored.notAfterMs === undefined ? { keyTag: stored.keyTag } : { keyTag: stored.keyTag, notAfterMs: stored.notAfterMs };
      return { route: stored.route, grant };
    },
  };
}

/** What a credential may make: sessions and links of its key, ending no later than it does. */
export function grantOf(credential: Credential): Grant | undefined {
  if (credential.kind === 'key') return { keyTag: credential.keyTag };
  if (credential.kind === 'session') return { keyTag: credential.keyTag, notAfterMs: credential.expiresAtMs };
  return undefined;
}

/**
 * Whether a changing request carrying only the session cookie comes from the service's own pages:
 * its Origin (sent by browsers on every POST, PATCH and DELETE) must be this host.
 */
export function isSameOrigin(req: AuthRequest): boolean {
  const origin = headerValue(req, 'origin');
  const host = headerValue(req, 'host');
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

function headerValue(req: AuthRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
