import type { FastifyRequest } from 'fastify';
import { isSameOrigin, type Auth, type Credential } from './auth.js';
import { HttpError } from './http-errors.js';

/**
 * Who may reach a route (docs/security.md#the-local-service), declared by the route itself in
 * its options (`config: KEY_ONLY`) and checked on the route Fastify matched, after Fastify has
 * decoded and routed the path. The check never reads the URL: `/%61pi/workflows`, an
 * absolute-form target and `/api/workflows` reach one route, so they meet one rule.
 *
 *   public          anyone: the health check, the login link, the dashboard's own files
 *   key-or-session  an API key, or a dashboard session (a change by session must come from the
 *                   dashboard's origin)
 *   key-only        an API key: the worker's reports, signing in, making a key
 *
 * A route that declares nothing is `key-or-session`, and so is the answer to a path no route
 * serves: without a credential every path that is not public answers the same 401, so a caller
 * without a key learns nothing of which paths exist.
 */

export type Access = 'public' | 'key-or-session' | 'key-only';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may reach the route (access.ts); none declared is `key-or-session`. */
    access?: Access;
  }
}

export const PUBLIC = { access: 'public' } as const;
export const KEY_OR_SESSION = { access: 'key-or-session' } as const;
export const KEY_ONLY = { access: 'key-only' } as const;

/** What a request on a public route carries: nothing was asked of it. */
const NO_CREDENTIAL: Credential = { kind: 'none' };

export const UNAUTHORIZED_DETAIL = [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }];
const KEY_ONLY_DETAIL = [{ loc: ['header', 'X-Service-Key'], msg: 'this route takes an API key in X-Service-Key; a dashboard session is not enough', type: 'unauthorized' }];
const CROSS_ORIGIN_DETAIL = [{ loc: ['header', 'Origin'], msg: 'a change with the session cookie must come from the dashboard', type: 'forbidden' }];

/** The access a route declared; undeclared is `key-or-session`. */
export function accessOf(config: { access?: Access } | undefined): Access {
  return config?.access ?? 'key-or-session';
}

/**
 * The `onRequest` hook deciding access (runs after routing, before the body is read): sets
 * `request.credential`, or refuses with 401 (no credential, or a session where a key is needed)
 * or 403 (a change by session from another origin).
 */
export function accessCheck(auth: Auth) {
  return async (request: FastifyRequest): Promise<void> => {
    const access = accessOf(request.routeOptions.config);
    if (access === 'public') {
      request.credential = NO_CREDENTIAL;
      return;
    }
    const credential = await auth.check(request);
    if (credential.kind === 'none') throw new HttpError(401, UNAUTHORIZED_DETAIL);
    if (access === 'key-only' && credential.kind !== 'key') throw new HttpError(401, KEY_ONLY_DETAIL);
    // The cookie rides along with any request the browser sends: a change must come from our pages.
    const readOnly = request.method === 'GET' || request.method === 'HEAD';
    if (credential.kind === 'session' && !readOnly && !isSameOrigin(request)) throw new HttpError(403, CROSS_ORIGIN_DETAIL);
    request.credential = credential;
  };
}

/** The identity a credential carries (a key's name), for `by` and the logs; null when none. */
export function identityOf(credential: Credential | null | undefined): string | null {
  return credential && credential.kind !== 'none' ? credential.identity : null;
}
