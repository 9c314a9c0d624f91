import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';

/**
 * Who may use the local service: a holder of one of the API keys, by `X-Service-Key`, or a browser
 * holding a session cookie that a key holder obtained — by signing in on the dashboard with the
 * key, or by following a short-lived login link a key holder asked for (`npm run demo` prints
 * one). The cookie is HttpOnly (page scripts never see it) and SameSite=Strict (other sites'
 * pages cannot send it); a changing request sent with it must also come from the service's own
 * origin.
 *
 * Sessions and links are HMAC-signed with a secret derived from the keys: they outlive a restart
 * of the service, and taking a key out of API_KEYS ends every session and link made while it
 * was in. Nothing is stored.
 */

export const SESSION_COOKIE = 'ew_session';
/** How long a dashboard session lasts. */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** How long a login link works, unless asked otherwise (at most LOGIN_LINK_MAX_TTL_MS). */
export const LOGIN_LINK_TTL_MS = 15 * 60_000;
export const LOGIN_LINK_MAX_TTL_MS = 24 * 3_600_000;

/** The dashboard routes a login link may open (a hash route: no open redirect to elsewhere). */
const ROUTE = /^#\/[A-Za-z0-9/_.-]*$/;

export type Credential = { kind: 'key' } | { kind: 'session' } | { kind: 'none' };

export interface Auth {
  /** The request's credential: a valid key in the header, else a valid session cookie. */
  check(req: http.IncomingMessage): Credential;
  /** A `Set-Cookie` value opening a session. */
  sessionCookie(nowMs?: number): string;
  /** A `Set-Cookie` value ending the session. */
  clearCookie(): string;
  /** A login token opening `route` (a dashboard hash route), valid for `ttlMs`. */
  loginToken(route: string, ttlMs?: number, nowMs?: number): { token: string; expiresAtMs: number };
  /** The route of a valid, unexpired login token; undefined otherwise. */
  redeem(token: string, nowMs?: number): string | undefined;
}

export function isDashboardRoute(route: string): boolean {
  return ROUTE.test(route) && route.length <= 300;
}

export function createAuth(keys: readonly string[]): Auth {
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  const digests = keys.map(digest);
  const secret = createHash('sha256').update(`execution-worker local service sessions\0${[...keys].sort().join('\0')}`).digest();
  const sign = (payload: string): string => createHmac('sha256', secret).update(payload).digest('base64url');
  const signed = (payload: string): string => `${payload}.${sign(payload)}`;
  /** The payload of a well-signed value; constant-time on the signature. */
  const verified = (value: string): string | undefined => {
    const cut = value.lastIndexOf('.');
    if (cut <= 0) return undefined;
    const payload = value.slice(0, cut);
    const given = Buffer.from(value.slice(cut + 1));
    const expected = Buffer.from(sign(payload));
    return given.length === expected.length && timingSafeEqual(given, expected) ? payload : undefined;
  };

  // Compares digests in constant time, so response timing does not leak a key's prefix.
  const isKey = (candidate: string | undefined): boolean => {
    if (candidate === undefined || candidate === '') return false;
    const d = digest(candidate);
    let ok = false;
    for (const known of digests) ok = timingSafeEqual(d, known) || ok;
    return ok;
  };

  const isSession = (value: string | undefined, nowMs: number): boolean => {
    const payload = value === undefined ? undefined : verified(value);
    const [kind, expires] = payload?.split('.') ?? [];
    return kind === 's1' && Number(expires) > nowMs;
  };

  return {
    check(req) {
      if (isKey(headerValue(req, 'x-service-key'))) return { kind: 'key' };
      if (isSession(cookieValue(req, SESSION_COOKIE), Date.now())) return { kind: 'session' };
      return { kind: 'none' };
    },
    sessionCookie(nowMs = Date.now()) {
      // A random part makes each session's value its own (two sign-ins never share one).
      const value = signed(`s1.${nowMs + SESSION_TTL_MS}.${randomBytes(9).toString('base64url')}`);
      return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}`;
    },
    clearCookie() {
      return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
    },
    loginToken(route, ttlMs = LOGIN_LINK_TTL_MS, nowMs = Date.now()) {
      if (!isDashboardRoute(route)) throw new Error(`not a dashboard route: ${route}`);
      const expiresAtMs = nowMs + Math.min(Math.max(1_000, ttlMs), LOGIN_LINK_MAX_TTL_MS);
      return { token: signed(`l1.${expiresAtMs}.${Buffer.from(route).toString('base64url')}`), expiresAtMs };
    },
    redeem(token, nowMs = Date.now()) {
      const [kind, expires, route, extra] = verified(token)?.split('.') ?? [];
      if (kind !== 'l1' || extra !== undefined || !(Number(expires) > nowMs) || route === undefined) return undefined;
      const decoded = Buffer.from(route, 'base64url').toString('utf8');
      return isDashboardRoute(decoded) ? decoded : undefined;
    },
  };
}

/**
 * Whether a changing request carrying only the session cookie comes from the service's own pages:
 * its Origin (sent by browsers on every POST, PATCH and DELETE) must be this host.
 */
export function isSameOrigin(req: http.IncomingMessage): boolean {
  const origin = headerValue(req, 'origin');
  const host = headerValue(req, 'host');
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

function headerValue(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function cookieValue(req: http.IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
