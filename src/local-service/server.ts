import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { redisOptions } from '../domain/redis-address.js';
import type { Logger } from '../telemetry/types.js';
import { createAuth, isSameOrigin, type Credential } from './auth.js';
import { createRedisSessionStore } from './session-store.js';
import { addExecutionRoutes } from './execution-routes.js';
import { addHumanRoutes } from './human-routes.js';
import { HttpError, notFound, sendError, sendJson } from './http-utils.js';
import { createJobQueue } from './job-queue.js';
import { createLiveHub } from './live-hub.js';
import { buildOpenApiDocument } from './openapi.js';
import { addProfileRoutes, type ProfileDirectory } from './profile-routes.js';
import { addPublishRoutes } from './publish-routes.js';
import { createRouter } from './router.js';
import { createSchedules } from './schedules.js';
import { addSessionRoutes, redeemLoginLink } from './session-routes.js';
import { setSecurityHeaders } from './security-headers.js';
import { serveArtifact, serveDashboard } from './static-files.js';
import { createStore } from './store.js';
import { addWorkflowRoutes } from './workflow-routes.js';

/**
 * The operator's API served locally (`execution-worker serve`, contract §9): every endpoint of
 * the seed, the worker's calls of contract §2, an OpenAPI document, the dashboard and the live
 * view of running executions, in one node:http server with its state in Redis.
 *
 * Authentication (auth.ts): `/api/*`, `/artifacts/*` and `/live/*` need `X-Service-Key` equal to
 * one of `apiKeys`, or the dashboard's session cookie (obtained with a key: `POST /api/session`,
 * or a login link from `POST /api/login-links`); a changing request with the cookie alone must
 * come from this origin. A missing or wrong key answers 401 with the same body shape as every
 * other error:
 *
 *   { "detail": [{ "loc": ["header", "X-Service-Key"], "msg": "missing or invalid API key", "type": "unauthorized" }] }
 *
 * `/`, `/dashboard/*`, `/openapi.json` and `/healthz` are public: they hold no data. `/login`
 * takes a login link's token.
 */

export interface LocalServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Accepted `X-Service-Key` values. Secrets: never logged. */
  apiKeys: string[];
  redisUrl: string;
  /** BullMQ queue and prefix the executions are enqueued on (contract §1). */
  queueName: string;
  queuePrefix: string;
  /** Folder served at `/artifacts/` (the worker's ARTIFACTS_DIR); none serves nothing. */
  artifactsDir?: string;
  logger: Logger;
  /** Prefix of the API's own Redis keys. Default `{api}:`. */
  keyPrefix?: string;
  /** The workers' browser profiles (docs/profiles.md), listed and deleted; none lists nothing. */
  profiles?: ProfileDirectory;
  /** Test-only: schedules may fire every second, not at most once a minute (docs/api.md#triggers). */
  allowEverySecond?: boolean;
}

export interface LocalServer {
  url: string;
  close(): Promise<void>;
}

export const UNAUTHORIZED_DETAIL = [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }];

export async function startLocalServer(opts: LocalServerOptions): Promise<LocalServer> {
  const keys = opts.apiKeys.map((k) => k.trim()).filter((k) => k !== '');
  if (keys.length === 0) throw new Error('the local API needs at least one API key (API_KEYS)');
  const log = opts.logger.child({ component: 'local-api' });
  let listeningPort = 0;

  // A command fails after a few reconnection attempts instead of hanging a request forever.
  const redis = new Redis(redisOptions(opts.redisUrl, { maxRetriesPerRequest: 3, lazyConnect: true }));
  redis.on('error', (error: Error) => log.warn({ err: error.message }, 'redis connection error'));
  await redis.connect();
  const keyPrefix = opts.keyPrefix ?? '{api}:';
  const store = createStore(redis, keyPrefix);
  // Sessions and login links are kept in Redis, so they survive a restart and can be ended.
  const auth = createAuth(keys, createRedisSessionStore(redis, `${keyPrefix}auth:`), () => `ew_session_${listeningPort}`);
  const queue = createJobQueue({ redisUrl: opts.redisUrl, queueName: opts.queueName, queuePrefix: opts.queuePrefix, logger: log });

  const live = createLiveHub({ redisUrl: opts.redisUrl, queuePrefix: opts.queuePrefix, queueName: opts.queueName, logger: log });
  let baseUrl = '';

  const router = createRouter();
  const allowEverySecond = opts.allowEverySecond ?? false;
  const schedules = createSchedules({ redisUrl: opts.redisUrl, queueName: opts.queueName, queuePrefix: opts.queuePrefix, store, queue, logger: log });
  addWorkflowRoutes(router, { store, queue, logger: log, schedules, allowEverySecond });
  addPublishRoutes(router, { store, schedules, logger: log });
  addExecutionRoutes(router, { store, logger: log });
  addHumanRoutes(router, { store, redis, queuePrefix: opts.queuePrefix, queueName: opts.queueName, keyPrefix: opts.keyPrefix ?? '{api}:', logger: log });
  addSessionRoutes(router, { auth, baseUrl: () => baseUrl });
  addProfileRoutes(router, opts.profiles);
  const openApi = JSON.stringify(buildOpenApiDocument());

  const authorise = async (req: http.IncomingMessage, readOnly: boolean): Promise<Credential> => {
    const credential = await auth.check(req);
    if (credential.kind === 'none') throw new HttpError(401, UNAUTHORIZED_DETAIL);
    // The cookie rides along with any request the browser sends: a change must come from our pages.
    if (credential.kind === 'session' && !readOnly && !isSameOrigin(req)) {
      throw new HttpError(403, [{ loc: ['header', 'Origin'], msg: 'a change with the session cookie must come from the dashboard', type: 'forbidden' }]);
    }
    return credential;
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://local');
    const { pathname } = url;
    const method = req.method ?? 'GET';
    const readOnly = method === 'GET' || method === 'HEAD';

    if (readOnly && pathname === '/') return serveDashboard(req, res, 'index.html');
    if (readOnly && pathname.startsWith('/dashboard/')) return serveDashboard(req, res, pathname.slice('/dashboard/'.length));
    if (readOnly && pathname === '/openapi.json') {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache' }).end(openApi);
      return;
    }
    if (readOnly && pathname === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (method === 'GET' && pathname === '/login') {
      const outcome = await redeemLoginLink(auth, url.searchParams.get('token'));
      if (outcome.status === 303) res.writeHead(303, { Location: outcome.location, 'Set-Cookie': outcome.cookie, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).end();
      else res.writeHead(401, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).end(outcome.page);
      return;
    }

    const liveMatch = /^\/live\/executions\/([^/]+)$/.exec(pathname);
    if (liveMatch) {
      await authorise(req, true);
      if (method !== 'GET') throw new HttpError(405, [{ loc: ['method'], msg: 'the live view is read with GET', type: 'method_not_allowed' }]);
      let executionId: string;
      try {
        executionId = decodeURIComponent(liveMatch[1] as string);
      } catch {
        throw notFound(['path', 'executionId'], 'execution');
      }
      return serveLive(executionId, req, res);
    }

    if (pathname.startsWith('/artifacts/')) {
      await authorise(req, true);
      if (!readOnly) throw new HttpError(405, [{ loc: ['method'], msg: 'artifacts are read-only', type: 'method_not_allowed' }]);
      if (!opts.artifactsDir) throw new HttpError(404, [{ loc: ['path'], msg: 'no artifacts folder is configured', type: 'not_found' }]);
      // The raw (still encoded) path: decoding happens once, inside the traversal guard.
      return serveArtifact(req, res, opts.artifactsDir, pathname.slice('/artifacts/'.length));
    }

    if (pathname.startsWith('/api/')) {
      const credential = await authorise(req, readOnly);
      const match = router.match(method, pathname);
      if (match.kind === 'found') return match.handler({ req, res, params: match.params, query: url.searchParams, credential });
      if (match.kind === 'method_not_allowed') {
        res.setHeader('Allow', match.allowed.join(', '));
        throw new HttpError(405, [{ loc: ['method'], msg: `${method} is not allowed here`, type: 'method_not_allowed' }]);
      }
    }
    throw new HttpError(404, [{ loc: ['path'], msg: 'Not Found', type: 'not_found' }]);
  }

  /** A running execution streams live; one that ended (or never ran) just says so. */
  async function serveLive(executionId: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const execution = await store.getExecution(executionId);
    if (!execution) throw notFound(['path', 'executionId'], 'execution');
    if (execution.status === 'completed' || execution.status === 'failed') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' }).end('event: end\ndata: {}\n\n');
      return;
    }
    await live.serve(executionId, req, res);
  }

  const server = http.createServer((req, res) => {
    const startedAt = Date.now();
    setSecurityHeaders(res);
    res.on('finish', () => log.debug({ method: req.method, path: req.url?.split('?')[0], status: res.statusCode, durationMs: Date.now() - startedAt }, 'request'));
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof HttpError) {
        sendError(res, error);
        return;
      }
      log.error({ method: req.method, path: req.url?.split('?')[0], err: error instanceof Error ? error.stack : String(error) }, 'request failed');
      sendError(res, new HttpError(500, [{ loc: [], msg: 'internal server error', type: 'internal' }]));
    });
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      // First, so that a tick under way finishes with the store and the queue still open.
      await schedules.close();
      const steps: Promise<unknown>[] = [
        live.close(),
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
        queue.close(),
        redis.quit().catch(() => redis.disconnect()),
      ];
      const results = await Promise.allSettled(steps);
      for (const r of results) if (r.status === 'rejected') log.warn({ err: String(r.reason) }, 'local API cleanup step failed');
      log.info({}, 'local API stopped');
    })();
    return closing;
  };

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, opts.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  listeningPort = address.port;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`;
  baseUrl = url;
  // A change cut short (the process stopped between the store and the scheduler) is put right.
  await schedules.reconcile().catch((error: unknown) => log.error({ err: String(error) }, 'could not reconcile the schedules'));
  log.info({ url, queue: opts.queueName, artifactsDir: opts.artifactsDir ?? null }, 'local API listening');
  return { url, close };
}
