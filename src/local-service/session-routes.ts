import { grantOf, LOGIN_LINK_TTL_MS, type Auth } from './auth.js';
import { HttpError, readJsonBody, sendJson } from './http-utils.js';
import type { createRouter } from './router.js';
import { validateBody } from './validation.js';

/**
 * Dashboard sessions (see auth.ts): sign in with a key, sign out, and login links that open one
 * dashboard page already signed in (`npm run demo` prints one).
 *
 *   POST   /api/session       key in X-Service-Key → 204 and the session cookie
 *   GET    /api/session       200 `{ "via": "key" | "session" }` (401 when neither)
 *   DELETE /api/session       204: the session ends on the server, the cookie is cleared
 *   POST   /api/login-links   `{ route?, ttlSeconds? }` → 201 `{ url, expires_at }`; single use
 *   GET    /login?token=…     (outside /api) sets the cookie and opens the route
 */

type Router = ReturnType<typeof createRouter>;

export function addSessionRoutes(router: Router, deps: { auth: Auth; baseUrl: () => string }): void {
  const { auth } = deps;

  router.add('POST', '/api/session', async ({ res, credential }) => {
    // A session is made from a key only: a session cannot extend itself forever.
    if (credential.kind !== 'key') throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'signing in needs an API key', type: 'unauthorized' }]);
    res.writeHead(204, { 'Set-Cookie': await auth.openSession({ keyTag: credential.keyTag }), 'Cache-Control': 'no-store' }).end();
  });

  router.add('GET', '/api/session', async ({ res, credential }) => {
    sendJson(res, 200, { via: credential.kind });
  });

  router.add('DELETE', '/api/session', async ({ req, res }) => {
    await auth.endSession(req);
    res.writeHead(204, { 'Set-Cookie': auth.clearCookie(), 'Cache-Control': 'no-store' }).end();
  });

  router.add('POST', '/api/login-links', async ({ req, res, credential }) => {
    const raw = await readJsonBody(req);
    const body = validateBody<{ route?: string; ttlSeconds?: number }>('LoginLinkRequest', raw === undefined ? {} : raw);
    const grant = grantOf(credential);
    if (!grant) throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }]);
    // A link made with a session's cookie opens a session that ends when that one does.
    const { token, expiresAtMs } = await auth.loginToken(body.route ?? '#/executions', grant, body.ttlSeconds === undefined ? LOGIN_LINK_TTL_MS : body.ttlSeconds * 1000);
    sendJson(res, 201, { url: `${deps.baseUrl()}/login?token=${encodeURIComponent(token)}`, expires_at: new Date(expiresAtMs).toISOString() });
  });
}

/** `GET /login?token=…`: a valid, unused link signs the browser in and opens its page. */
export async function redeemLoginLink(auth: Auth, token: string | null): Promise<{ status: 303; location: string; cookie: string } | { status: 401; page: string }> {
  const redeemed = token ? await auth.redeem(token) : undefined;
  if (redeemed === undefined) {
    return {
      status: 401,
      page: '<!doctype html><meta charset="utf-8"><title>Login link</title><p>This login link is invalid, has been used or has expired. <a href="/#/settings">Sign in with an API key</a>.</p>',
    };
  }
  return { status: 303, location: `/${redeemed.route}`, cookie: await auth.openSession(redeemed.grant) };
}
