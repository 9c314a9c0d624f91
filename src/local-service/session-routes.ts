import { loginLink, loginLinkRequest, sessionInfo } from '../contract/access.js';
import { grantOf, LOGIN_LINK_TTL_MS, type Auth, type AuthRequest } from './auth.js';
import { optionalBody, type App } from './app.js';
import { HttpError } from './http-errors.js';
import { answer, commonErrors } from './openapi.js';
import { OPERATOR, OPERATOR_KEY } from './access.js';

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

export function addSessionRoutes(app: App, deps: { auth: Auth; baseUrl: () => string }): void {
  const { auth } = deps;

  app.post('/api/session', {
    // A session is made from a key only: a session cannot extend itself forever.
    config: OPERATOR_KEY,
    schema: { summary: 'Sign the dashboard in: the key in X-Service-Key sets an HttpOnly session cookie (12 h)', response: { 204: answer('Signed in; `Set-Cookie: ew_session_<port>=…`.'), ...commonErrors } },
  }, async (request, reply) => {
    const { credential } = request;
    // A session is made from a key only: a session cannot extend itself forever.
    if (credential.kind !== 'key') throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'signing in needs an API key', type: 'unauthorized' }]);
    return reply.headers({ 'Set-Cookie': await auth.openSession({ keyTag: credential.keyTag }), 'Cache-Control': 'no-store' }).code(204).send();
  });

  app.get('/api/session', {
    config: OPERATOR,
    schema: {
      summary: 'How this request is signed in, and as whom',
      response: {
        200: answer('`{ "via": "key" | "session", "identity" }`: `identity` is the name of the key (for a session, of the key that opened it).', sessionInfo),
        ...commonErrors,
      },
    },
  }, async ({ credential }) => {
    // The access check let in a key or a session only; anything else has no identity to tell.
    if (credential.kind === 'none') throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }]);
    return { via: credential.kind, identity: credential.identity };
  });

  app.delete('/api/session', {
    config: OPERATOR,
    schema: { summary: 'Sign out: ends the session on the server and clears the cookie', response: { 204: answer('Signed out.'), ...commonErrors } },
  }, async (request, reply) => {
    await auth.endSession(request);
    return reply.headers({ 'Set-Cookie': auth.clearCookie(), 'Cache-Control': 'no-store' }).code(204).send();
  });

  app.post('/api/login-links', {
    config: OPERATOR,
    preValidation: optionalBody,
    schema: {
      summary: 'A short-lived, single-use link that opens a dashboard page already signed in',
      description: 'The link (`/login?token=…`) sets the session cookie and opens `route`; it works once, until `ttlSeconds` have passed.',
      body: loginLinkRequest,
      response: { 201: answer('`{ "url", "expires_at" }`.', loginLink), ...commonErrors },
    },
  }, async (request, reply) => {
    const { body } = request;
    const grant = grantOf(request.credential);
    if (!grant) throw new HttpError(401, [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }]);
    // A link made with a session's cookie opens a session that ends when that one does, and only
    // in the browser that asked for it: the answer gives that browser a link cookie, and the link
    // is redeemed only beside it. A link made with a key (a terminal, a script) has no browser to
    // bind to: it is the key holder's, single use and short-lived (docs/security.md#sessions-and-the-browser).
    const bound = request.credential.kind === 'session' ? auth.linkCookie(request) : undefined;
    const { token, expiresAtMs } = await auth.loginToken(body.route ?? '#/executions', grant, body.ttlSeconds === undefined ? LOGIN_LINK_TTL_MS : body.ttlSeconds * 1000, undefined, bound?.binder);
    if (bound) reply.header('Set-Cookie', bound.cookie);
    return reply.code(201).send({ url: `${deps.baseUrl()}/login?token=${encodeURIComponent(token)}`, expires_at: new Date(expiresAtMs).toISOString() });
  });
}

/** `GET /login?token=…`: a valid, unused link signs the browser in and opens its page. */
export async function redeemLoginLink(auth: Auth, token: string | null, req: AuthRequest): Promise<{ status: 303; location: string; cookie: string } | { status: 401; page: string }> {
  const redeemed = token ? await auth.redeem(token, undefined, req) : undefined;
  if (redeemed === undefined) {
    return {
      status: 401,
      page: '<!doctype html><meta charset="utf-8"><title>Login link</title><p>This login link is invalid, has been used, has expired, or was asked for by another browser. <a href="/#/settings">Sign in with an API key</a>.</p>',
    };
  }
  return { status: 303, location: `/${redeemed.route}`, cookie: await auth.openSession(redeemed.grant) };
}
