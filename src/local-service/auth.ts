import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';

/** What auth reads of a request: its headers, and its cookies as @fastify/cookie parsed them. */
export interface AuthRequest {
  headers: http.IncomingHttpHeaders;
  cookies?: Record<string, string | undefined>;
}

/**
 * Who may use the local service (docs/operations.md#the-local-api-and-dashboard): a holder of one of the API keys,
 * by `X-Service-Key`, or a browser holding a session cookie that a key holder obtained — by
 * signing in on the dashboard with the key, or by following a login link.
 *
 * Sessions and login links live on the server (a `SessionStore`, Redis in the service): the
 * cookie and the link carry only a random id, stored as its SHA-256. So signing out ends the
 * session for whoever holds a copy of the cookie, a login link works once, and taking a key out
 * of API_KEYS ends every session and link made with it. A session ends at a fixed time that
 * nothing extends: a login link minted with a session's cookie opens a session that ends when
 * the minting one does, so a stolen cookie cannot renew itself.
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

/** The dashboard routes a login link may open (a hash route: no open redirect to elsewhere). */
const ROUTE = /^#\/[A-Za-z0-9/_.-]*$/;

/** `keyTag` names the key a credential comes from (a digest, never the key). */
export type Credential = { kind: 'key'; keyTag: string } | { kind: 'session'; keyTag: string; expiresAtMs: number } | { kind: 'none' };

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
  /** The request's credential: a valid key in the header, else a live session cookie. */
  check(req: AuthRequest, nowMs?: number): Promise<Credential>;
  /** Opens a session for `grant`, ending at its `notAfterMs` at the latest: the `Set-Cookie` value. */
  openSession(grant: Grant, nowMs?: number): Promise<string>;
  /** Ends the request's session on the server (whoever else holds the cookie). */
  endSession(req: AuthRequest): Promise<void>;
  /** A `Set-Cookie` value clearing the cookie in this browser. */
  clearCookie(): string;
  /** A single-use login token opening `route`, valid for `ttlMs`, made by `grant`. */
  loginToken(route: string, grant: Grant, ttlMs?: number, nowMs?: number): Promise<{ token: string; expiresAtMs: number }>;
  /** Redeems a login token once: its route and grant; undefined when unknown, used or expired. */
  redeem(token: string, nowMs?: number): Promise<{ route: string; grant: Grant } | undefined>;
}

/** What a session or link was made with: which key (as a tag), and the latest end it may have. */
export interface Grant {
  keyTag: string;
  notAfterMs?: number;
}

interface Stored {
  keyTag: string;
  expiresAtMs: number;
  /** A login link's route, and the latest end of the session it opens. */
  route?: string;
  notAfterMs?: number;
}

export function isDashboardRoute(route: string): boolean {
  return ROUTE.test(route) && route.length <= 300;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
/** A key's tag in stored records: a digest, never the key. */
const tagOf = (key: string): string => createHash('sha256').update(`execution-worker local service key\0${key}`).digest('base64url');
const newId = (): string => randomBytes(32).toString('base64url');
const ID = /^[A-Za-z0-9_-]{43}$/;

export function createAuth(keys: readonly string[], store: SessionStore, cookieName: () => string = () => 'ew_session'): Auth {
  const digests = keys.map(digest);
  const tags = new Set(keys.map(tagOf));

  // Compares digests in constant time, so response timing does not leak a key's prefix.
  const keyOf = (candidate: string | undefined): string | undefined => {
    if (candidate === undefined || candidate === '') return undefined;
    const d = digest(candidate);
    let ok = false;
    for (const known of digests) ok = timingSafeEqual(d, known) || ok;
    return ok ? candidate : undefined;
  };

  const read = async (kind: 's' | 'l', id: string | undefined, take: boolean, nowMs: number): Promise<Stored | undefined> => {
    if (id === undefined || !ID.test(id)) return undefined;
    const storeId = `${kind}:${digest(id).toString('base64url')}`;
    const raw = take ? await store.take(storeId) : await store.get(storeId);
    if (raw === undefined) return undefined;
    const stored = JSON.parse(raw) as Stored;
    // The store's own expiry is the first guard; the time and the key are checked again here.
    if (!(stored.expiresAtMs > nowMs) || !tags.has(stored.keyTag)) return undefined;
    return stored;
  };

  const write = async (kind: 's' | 'l', record: Stored, nowMs: number): Promise<string> => {
    const id = newId();
    await store.put(`${kind}:${digest(id).toString('base64url')}`, JSON.stringify(record), Math.max(1, record.expiresAtMs - nowMs));
    return id;
  };

  const cookieFrom = (req: AuthRequest): string | undefined => req.cookies?.[cookieName()];

  return {
    get cookieName() {
      return cookieName();
    },
    async check(req, nowMs = Date.now()) {
      const key = keyOf(headerValue(req, 'x-service-key'));
      if (key !== undefined) return { kind: 'key', keyTag: tagOf(key) };
      const session = await read('s', cookieFrom(req), false, nowMs);
      return session ? { kind: 'session', keyTag: session.keyTag, expiresAtMs: session.expiresAtMs } : { kind: 'none' };
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
    clearCookie() {
      return `${cookieName()}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
    },
    async loginToken(route, grant, ttlMs = LOGIN_LINK_TTL_MS, nowMs = Date.now()) {
      if (!isDashboardRoute(route)) throw new Error(`not a dashboard route: ${route}`);
      const expiresAtMs = nowMs + Math.min(Math.max(1_000, ttlMs), LOGIN_LINK_MAX_TTL_MS);
      const record: Stored = { keyTag: grant.keyTag, expiresAtMs, route, ...(grant.notAfterMs === undefined ? {} : { notAfterMs: grant.notAfterMs }) };
      return { token: await write('l', record, nowMs), expiresAtMs };
    },
    async redeem(token, nowMs = Date.now()) {
      const stored = await read('l', token, true, nowMs);
      if (!stored?.route || !isDashboardRoute(stored.route)) return undefined;
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
