import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type RawServerDefault, type RouteOptions } from 'fastify';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import FindMyWay from 'find-my-way';
import type { Logger } from '../telemetry/types.js';
import type { Access } from './access.js';
import type { Credential } from './auth.js';
import { HttpError, unprocessable } from './http-errors.js';
import { SECURITY_HEADERS } from './security-headers.js';
import { requestValidatorCompiler } from './validation.js';

/**
 * The local service's Fastify instance and what every route shares: bodies read as JSON and only
 * when sent as `application/json` (an empty body is no body; any other type is 415 before a
 * handler runs, so a page elsewhere cannot post a `text/plain` "simple request" that acts), the
 * routes' zod schemas (src/contract/) parsing what comes in (validation.ts) and checking what goes
 * out, the service description's error shape for every error (validation, size, unknown route,
 * wrong method), the browser security headers, and a debug line per request. The routes, and the
 * hooks deciding access (access.ts, host-guard.ts), are added by server.ts.
 *
 * Handlers are typed by their route's schemas (fastify-type-provider-zod's type provider): the
 * body, query and parameters a handler reads, and the answer it returns, are the types the
 * schemas infer. An answer that is not of its declared shape is a 500 (logged), never sent.
 */

declare module 'fastify' {
  interface FastifyRequest {
    /** How the request proved it may come in (set by the access hook, access.ts). */
    credential: Credential;
  }
  interface FastifySchema {
    /** OpenAPI only (@fastify/swagger): a route left out of the document. */
    hide?: boolean;
    summary?: string;
    description?: string;
  }
}

/** Largest JSON body accepted: payloads and schemas are small; anything larger is a mistake. */
export const MAX_BODY_BYTES = 1_048_576;

/**
 * A route as served: its method and its pattern (`/api/workflows/:id`), whether the OpenAPI
 * document hides it, and the access it declared (undefined: none, which counts as
 * `key-or-session`).
 */
export interface ServedRoute {
  method: string;
  url: string;
  hidden: boolean;
  access: Access | undefined;
}

/** A route's `preValidation` for an optional body: none is `{}`. */
export async function optionalBody(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The service's Fastify instance, its routes typed by their zod schemas. */
export type App = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;

export function createApp(log: Logger): { app: App; routes: ServedRoute[] } {
  // HEAD only where declared (files, health, the document): the API's routes answer 405 to it.
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_BODY_BYTES,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    forceCloseConnections: true,
    // A trailing slash names the same route as the path without it (`GET /api/executions/` is the
    // list), on every route alike (docs/api.md#paths).
    routerOptions: { ignoreTrailingSlash: true },
    // A path that does not decode (`%E0%A4%A`) names nothing here: 404, like any unknown path.
    frameworkErrors: (error, _request, reply: FastifyReply) => {
      if (error.code !== 'FST_ERR_BAD_URL') throw error;
      void reply.code(404).headers(SECURITY_HEADERS).send({ detail: [{ loc: ['path'], msg: 'Not Found', type: 'not_found' }] });
    },
  }).withTypeProvider<ZodTypeProvider>();
  // Fastify wants a plain value here; the authorisation hook sets the real one per request.
  app.decorateRequest('credential', null as never);
  app.setValidatorCompiler(requestValidatorCompiler());
  // Each answer is checked against its status's schema on its way out (an unknown field is left
  // out); one that is not of its shape throws, and the error handler answers 500.
  app.setSerializerCompiler(serializerCompiler);

  // Which methods a path has, for a 405 with `Allow` instead of Fastify's 404.
  const known = FindMyWay({ ignoreTrailingSlash: true });
  const routes: ServedRoute[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    for (const method of [route.method].flat()) {
      routes.push({ method, url: route.url, hidden: route.schema?.hide === true, access: route.config?.access });
      known.on(method as 'GET', route.url, () => undefined);
    }
  });

  // JSON only, by its type: a body of any other type (or none) has no parser, so Fastify answers
  // 415 before validation and handler. An empty body reads as no body.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      // The parser's message quotes the text around the fault (a password, maybe): only where it is.
      const at = /position (\d+)/.exec(error instanceof Error ? error.message : '')?.[1];
      return done(unprocessable([{ loc: ['body'], msg: at === undefined ? 'invalid JSON' : `invalid JSON at character ${at}`, type: 'json_invalid' }]), undefined);
    }
    // JSON.parse keeps a `__proto__` key as an own property, which a copy into a plain object
    // (zod's records do so) silently drops: refused rather than lost.
    const proto = protoKeyPath(parsed);
    if (proto !== undefined) return done(unprocessable([{ loc: ['body', ...proto], msg: 'a key named __proto__ is not accepted', type: 'key_refused' }]), undefined);
    done(null, parsed);
  });

  app.addHook('onRequest', async (_request, reply) => {
    // Set before a handler writes; a handler may still replace one (artifacts' CSP).
    reply.headers(SECURITY_HEADERS);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    // A string is sent as text without passing the serializer: on a route that declares its
    // answers (JSON, checked), a text answer is a handler's mistake, not a body to send.
    if (typeof payload === 'string' && request.routeOptions.schema?.response && String(reply.getHeader('content-type')).startsWith('text/plain')) {
      throw new Error(`${request.method} ${request.routeOptions.url ?? ''} answered text where its route declares a JSON answer`);
    }
    if (!reply.hasHeader('cache-control')) reply.header('Cache-Control', 'no-store');
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    const by = request.credential && request.credential.kind !== 'none' ? request.credential.identity : null;
    log.debug({ method: request.method, path: request.url.split('?')[0], status: reply.statusCode, by, durationMs: Math.round(reply.elapsedTime) }, 'request');
  });

  // A path no route serves declares no access, so it is `key-or-session` like any undeclared
  // route (access.ts): without a credential it answers the same 401 as a route that exists, and
  // only a caller with a credential sees 404 or 405.
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => m !== request.method && known.find(m, path) !== null);
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      throw new HttpError(405, [{ loc: ['method'], msg: `${request.method} is not allowed here`, type: 'method_not_allowed' }]);
    }
    throw new HttpError(404, [{ loc: ['path'], msg: 'Not Found', type: 'not_found' }]);
  });

  app.setErrorHandler(async (error: FastifyError | HttpError, request, reply) => {
    if (error instanceof HttpError) return reply.code(error.status).send({ detail: error.detail });
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send({ detail: [{ loc: ['body'], msg: `body larger than ${MAX_BODY_BYTES} bytes`, type: 'too_large' }] });
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.code(415).send({ detail: [{ loc: ['header', 'Content-Type'], msg: 'a request body must be sent as application/json', type: 'unsupported_media_type' }] });
    }
    const status = error.statusCode ?? 500;
    // A range past the end of an artifact: its size in Content-Range, no body (RFC 9110).
    if (status === 416) {
      const headers = (error as { headers?: Record<string, string> }).headers ?? {};
      return reply.code(416).headers(headers).send();
    }
    if (status < 500) {
      return reply.code(status).send({ detail: [{ loc: [], msg: error.message, type: (error.code ?? 'bad_request').toLowerCase() }] });
    }
    log.error({ method: request.method, path: request.url.split('?')[0], err: error }, 'request failed');
    return reply.code(500).send({ detail: [{ loc: [], msg: 'internal server error', type: 'internal' }] });
  });

  return { app, routes };
}

/**
 * The path of the first `__proto__` key in a parsed JSON value; undefined when there is none.
 * Walked without recursion, each node once, its path kept as a link to its parent and spelled
 * out only for the key found: linear in the body whatever its depth.
 */
function protoKeyPath(value: unknown): (string | number)[] | undefined {
  interface Visit {
    value: unknown;
    key: string | number;
    parent: Visit | undefined;
  }
  const pathOf = (visit: Visit): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent) path.push(at.key);
    return path.reverse();
  };
  const stack: Visit[] = [{ value, key: '', parent: undefined }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const node = visit.value;
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      node.forEach((item, index) => stack.push({ value: item, key: index, parent: visit }));
      continue;
    }
    for (const key of Object.keys(node)) {
      const child: Visit = { value: (node as Record<string, unknown>)[key], key, parent: visit };
      if (key === '__proto__') return pathOf(child);
      stack.push(child);
    }
  }
  return undefined;
}
