import type { FastifyRequest } from 'fastify';
import type { KeyRole } from '../contract/access.js';
import { isSameOrigin, type Auth, type Credential } from './auth.js';
import { HttpError } from './http-errors.js';

/**
 * Who may reach a route (docs/security.md#the-local-service), declared by the route itself in
 * its options (`config: OPERATOR`) and checked on the route Fastify matched, after Fastify has
 * decoded and routed the path. The check never reads the URL: `/%61pi/workflows`, an
 * absolute-form target and `/api/workflows` reach one route, so they meet one rule.
 *
 * A declaration says how the request may prove itself and which roles it needs:
 *
 *   PUBLIC          anyone: the health check, the login link, the dashboard's own files
 *   OPERATOR        an operator's key or a dashboard session (a change by session must come from
 *                   the dashboard's origin): the API and the dashboard
 *   OPERATOR_KEY    an operator's key, never a session: signing in, making a key
 *   WORKER_REPORT   a worker's key, never a session: the worker's reports (`started`, …)
 *   WORKER_READ     a worker's or an operator's key, or a session: what the worker reads
 *                   (an execution, a workflow's versions)
 *
 * A key has the roles it was made with (`API_KEYS`: both; a dashboard key: the one chosen); a
 * session is an operator's. A route that declares nothing is reached by nobody (a route added
 * without a declaration answers 403 to every credential, and the access-matrix test names it);
 * a path no route serves takes any credential, then answers 404 or 405: without one, every path
 * that is not public answers the same 401, so a caller without a key learns nothing of which
 * paths exist.
 */

export type Access = { readonly via: 'public' } | { readonly via: 'key-or-session' | 'key-only'; readonly roles: readonly KeyRole[] };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may reach the route (access.ts); none declared is nobody. */
    access?: Access;
  }
}

export const PUBLIC = { access: { via: 'public' } } as const satisfies { access: Access };
export const OPERATOR = { access: { via: 'key-or-session', roles: ['operator'] } } as const satisfies { access: Access };
export const OPERATOR_KEY = { access: { via: 'key-only', roles: ['operator'] } } as const satisfies { access: Access };
export const WORKER_REPORT = { access: { via: 'key-only', roles: ['worker'] } } as const satisfies { access: Access };
export const WORKER_READ = { access: { via: 'key-or-session', roles: ['operator', 'worker'] } } as const satisfies { access: Access };

/** What a request on a public route carries: nothing was asked of it. */
const NO_CREDENTIAL: Credential = { kind: 'none' };

export const UNAUTHORIZED_DETAIL = [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }];
const KEY_ONLY_DETAIL = [{ loc: ['header', 'X-Service-Key'], msg: 'this route takes an API key in X-Service-Key; a dashboard session is not enough', type: 'unauthorized' }];
const CROSS_ORIGIN_DETAIL = [{ loc: ['header', 'Origin'], msg: 'a change with the session cookie must come from the dashboard', type: 'forbidden' }];
const UNDECLARED_DETAIL = [{ loc: [], msg: 'this route declares no access: nobody may reach it', type: 'forbidden' }];
const roleDetail = (needs: readonly KeyRole[]) => [{ loc: ['header', 'X-Service-Key'], msg: `this route needs a key with the role ${needs.join(' or ')}`, type: 'forbidden' }];

/** The access a route declared; undefined when it declared none (reached by nobody). */
export function accessOf(config: { access?: Access } | undefined): Access | undefined {
  return config?.access;
}

/**
 * The `onRequest` hook deciding access (runs after routing, before the body is read): sets
 * `request.credential`, or refuses with 401 (no credential, or a session where a key is needed)
 * or 403 (a role the credential lacks, a route that declared nothing, a change by session from
 * another origin).
 */
export function accessCheck(auth: Auth) {
  return async (request: FastifyRequest): Promise<void> => {
    const access = request.is404 ? undefined : accessOf(request.routeOptions.config);
    if (access?.via === 'public') {
      request.credential = NO_CREDENTIAL;
      return;
    }
    const credential = await auth.check(request);
    if (credential.kind === 'none') throw new HttpError(401, UNAUTHORIZED_DETAIL);
    // A path no route serves: any credential learns it is not there (404, 405).
    if (request.is404) {
      request.credential = credential;
      return;
    }
    if (access === undefined) throw new HttpError(403, UNDECLARED_DETAIL);
    if (access.via === 'key-only' && credential.kind !== 'key') throw new HttpError(401, KEY_ONLY_DETAIL);
    if (!access.roles.some((role) => credential.roles.includes(role))) throw new HttpError(403, roleDetail(access.roles));
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
