import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { z } from 'zod';
import type { ProfileKeyring } from '../domain/profile-crypto.js';
import { describeRedisAddress, redisOptions } from '../domain/redis-address.js';
import type { Logger, Tracing } from '../telemetry/types.js';
import { accessCheck, OPERATOR, PUBLIC } from './access.js';
import { createRedisApiKeyStore, type ApiKeyStore } from './api-keys.js';
import { createApp, type App, type ServedRoute } from './app.js';
import { createFolderEraser, type ArtifactEraser } from './artifact-eraser.js';
import { createAuth, type Auth } from './auth.js';
import { addExecutionRoutes } from './execution-routes.js';
import { createRunCostReader } from './run-cost.js';
import { addArtifactRoutes, addDashboardRoutes } from './file-routes.js';
import { notFound } from './http-errors.js';
import type { PublicHost } from '../domain/public-hosts.js';
import { hostGuard } from './host-guard.js';
import { addHumanRoutes } from './human-routes.js';
import { createJobQueue, type JobQueue } from './job-queue.js';
import { addKeyRoutes } from './key-routes.js';
import { addMcpRoute, bearerAsServiceKey } from './mcp-route.js';
import { createLiveHub, type LiveHub } from './live-hub.js';
import { answer, commonErrors, componentSchemas, notFoundAnswer, pathParams, swaggerOptions } from './openapi.js';
import { addProfileRoutes, type ProfileDirectory } from './profile-routes.js';
import { addPublishRoutes } from './publish-routes.js';
import { createSchedules, type Schedules } from './schedules.js';
import { createRedisSessionStore } from './session-store.js';
import { addSessionRoutes, redeemLoginLink } from './session-routes.js';
import { createStore, type Store } from './store.js';
import { addWorkflowRoutes } from './workflow-routes.js';
import type { SendOptions } from './webhooks/send.js';
import type { Resolve } from './webhooks/targets.js';
import { createWebhooks, type Webhooks } from './webhooks/webhooks.js';

/**
 * The operator's API served locally (`execution-worker serve`, docs/operations.md#the-local-api-and-dashboard): every endpoint of
 * the service description, the worker's calls (docs/api.md#every-call), API keys, an OpenAPI document, the
 * dashboard and the live view of running executions, in one Fastify server (app.ts) with its
 * state in Redis.
 *
 * Access (docs/security.md#the-local-service) is decided by two hooks on the route Fastify
 * matched, never on the URL's text: host-guard.ts refuses a `Host` the service does not serve
 * (421), access.ts applies the access each route declares (`public`, `key-or-session`,
 * `key-only`). A missing or wrong key answers 401 with the same body shape as every other
 * error:
 *
 *   { "detail": [{ "loc": ["header", "X-Service-Key"], "msg": "missing or invalid API key", "type": "unauthorized" }] }
 *
 * Public: `GET /healthz`, the login link (`/login`) and the dashboard's files (`/`,
 * `/dashboard/*`).
 */

/** What the service is, however it is reached. */
export interface ServiceOptions {
  /** `API_KEYS`, the bootstrap keys (the dashboard makes others). Secrets: never logged. */
  apiKeys: string[];
  /** Host names, besides the address it listens on, that the service answers for (PUBLIC_HOSTS). */
  publicHosts?: readonly PublicHost[];
  redisUrl: string;
  /** BullMQ queue and prefix the executions are enqueued on (docs/queue-and-jobs.md#the-queue). */
  queueName: string;
  queuePrefix: string;
  /** Folder served at `/artifacts/` (the worker's ARTIFACTS_DIR); none serves nothing. */
  artifactsDir?: string;
  /**
   * Removes a deleted workflow's artifacts where the workers wrote them (the bucket, else
   * ARTIFACTS_DIR under S3_PREFIX). Default: the folder `artifactsDir`, no prefix; neither: none.
   */
  artifacts?: ArtifactEraser;
  logger: Logger;
  /** Prefix of the API's own Redis keys. Default `{api}:`. */
  keyPrefix?: string;
  /** The workers' browser profiles (docs/profiles.md), listed and deleted; none lists nothing. */
  profiles?: ProfileDirectory;
  /** Test-only: schedules may fire every second, not at most once a minute (docs/api.md#triggers). */
  allowEverySecond?: boolean;
  /**
   * PROFILE_KEYS: the secrets of versions' default inputs are stored sealed with them
   * (docs/secrets.md#at-rest); without, a default input with secrets is refused.
   */
  inputKeys?: ProfileKeyring;
  /**
   * Where the service's spans go (docs/operations.md#traces): the execute route and each
   * schedule tick start the trace its execution continues. Absent: nowhere.
   */
  tracing?: Tracing;
  /** WEBHOOK_RETRY_SCHEDULE_MS: the pauses before each retry of a webhook delivery (docs/api.md#webhooks). */
  webhookRetryScheduleMs?: readonly number[];
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: private and CGNAT ranges may be webhook receivers (docs/api.md#webhooks). */
  webhookAllowPrivateNetworks?: boolean;
  /** Tests: how deliveries resolve names and open sockets (they watch that a refused one opens none). */
  webhookResolve?: Resolve;
  webhookConnect?: SendOptions['connect'];
}

/** The service listening on a TCP port (`serve`). */
export interface LocalServerOptions extends ServiceOptions {
  /** 0 picks a free port. */
  port: number;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
}

/**
 * Tests: the same service, every hook and route, listening on no socket: requests reach it through
 * Fastify's `inject` (test/support/call.ts). What a listening server reads from its socket has a
 * fixed value instead: it answers as IN_PROCESS_ORIGIN, the authority `inject` names by default
 * (`Host: localhost:80`), for requests arriving on loopback; its session cookie is `ew_session_80`.
 */
export interface InProcessServerOptions extends ServiceOptions {
  listen: false;
}

/** The origin an in-process server answers as (its login links name it; the `Host` it serves). */
export const IN_PROCESS_ORIGIN = 'http://localhost';
const IN_PROCESS_PORT = 80;
/** The local address an in-process request is taken to have arrived on (it has no socket). */
const IN_PROCESS_ADDRESS = '127.0.0.1';

export interface LocalServer {
  url: string;
  /** Every route served (method and pattern), as the OpenAPI document should list them. */
  routes: readonly ServedRoute[];
  close(): Promise<void>;
}

/** A server started with `listen: false`: no URL, nothing listens; `inject` reaches it. */
export interface InProcessServer {
  /** One request, answered by the server's hooks and routes as Fastify's `inject` sends it. */
  inject(request: InjectOptions): Promise<LightMyRequestResponse>;
  routes: readonly ServedRoute[];
  close(): Promise<void>;
}

export function startLocalServer(opts: InProcessServerOptions): Promise<InProcessServer>;
export function startLocalServer(opts: LocalServerOptions): Promise<LocalServer>;
export async function startLocalServer(opts: LocalServerOptions | InProcessServerOptions): Promise<LocalServer | InProcessServer> {
  const keys = opts.apiKeys.map((k) => k.trim()).filter((k) => k !== '');
  if (keys.length === 0) throw new Error('the local API needs at least one API key (API_KEYS)');
  const log = opts.logger.child({ component: 'local-api' });
  // A `listen` key means in process, and only as `listen: false` without a port: an options
  // object the overloads typed otherwise (a spread carrying `listen: true`, or a port beside
  // `listen: false`) is refused, not guessed at, or its caller's type would name the other server.
  const inProcess = 'listen' in opts;
  if (inProcess && (opts.listen !== false || 'port' in opts)) throw new Error('startLocalServer: listen takes only false (in process, no socket), and then no port');
  let listeningPort = inProcess ? IN_PROCESS_PORT : 0;

  // A command fails after a few reconnection attempts instead of hanging a request forever.
  const redis = new Redis(redisOptions(opts.redisUrl, { maxRetriesPerRequest: 3, lazyConnect: true }));
  let lastRedisError = '';
  redis.on('error', (error: Error) => {
    lastRedisError = error.message;
    log.warn({ err: error.message }, 'redis connection error');
  });
  // Redis out of reach stops the start; a client left retrying would keep the process alive.
  await redis.connect().catch((error: unknown) => {
    redis.disconnect();
    throw new Error(`cannot reach Redis at ${describeRedisAddress(opts.redisUrl)}: ${lastRedisError || (error as Error).message}`);
  });
  const keyPrefix = opts.keyPrefix ?? '{api}:';
  const webhooks = createWebhooks({
    redis, keyPrefix, redisUrl: opts.redisUrl, queueName: opts.queueName, queuePrefix: opts.queuePrefix, logger: log,
    ...(opts.inputKeys ? { keys: opts.inputKeys } : {}),
    ...(opts.webhookRetryScheduleMs ? { retryScheduleMs: opts.webhookRetryScheduleMs } : {}),
    ...(opts.webhookAllowPrivateNetworks ? { allowPrivateNetworks: true } : {}),
    ...(opts.webhookResolve ? { resolve: opts.webhookResolve } : {}),
    ...(opts.webhookConnect ? { connect: opts.webhookConnect } : {}),
  });
  // Its warning about unsealed secrets, if one is due, is written during the start.
  await webhooks.ready;
  // Every change of an execution's status goes through this store, and queues its webhook event.
  const store = webhooks.observe(createStore(redis, keyPrefix));
  // Keys, sessions and login links are kept in Redis, so they survive a restart and can be ended.
  const apiKeys = createRedisApiKeyStore(redis, `${keyPrefix}keys:`);
  const auth = createAuth({ bootstrapKeys: keys, keys: apiKeys, sessions: createRedisSessionStore(redis, `${keyPrefix}auth:`), cookieName: () => `ew_session_${listeningPort}` });
  const queue = createJobQueue({ redisUrl: opts.redisUrl, queueName: opts.queueName, queuePrefix: opts.queuePrefix, logger: log });

  const live = createLiveHub({ redisUrl: opts.redisUrl, queuePrefix: opts.queuePrefix, queueName: opts.queueName, logger: log });
  let baseUrl = inProcess ? IN_PROCESS_ORIGIN : '';

  const { app, routes } = createApp(log);
  const schedules = createSchedules({ redisUrl: opts.redisUrl, queueName: opts.queueName, queuePrefix: opts.queuePrefix, store, queue, logger: log, ...(opts.tracing ? { tracing: opts.tracing } : {}), ...(opts.inputKeys ? { inputKeys: opts.inputKeys } : {}) });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      // First, so that a tick under way finishes with the store and the queue still open.
      await schedules.close();
      // Before Redis: an attempt under way records its outcome (a report arriving now answers 500 and is retried).
      await webhooks.close();
      const steps: Promise<unknown>[] = [
        live.close(),
        app.close(),
        queue.close(),
        redis.quit().catch(() => redis.disconnect()),
      ];
      const results = await Promise.allSettled(steps);
      for (const r of results) if (r.status === 'rejected') log.warn({ err: String(r.reason) }, 'local API cleanup step failed');
      log.info({}, 'local API stopped');
    })();
    return closing;
  };

  // Whatever stops the server from coming up (a plugin that fails to register, a bad route, the
  // port in use) closes every connection opened above, or the process would hang on them.
  let address: string | undefined;
  try {
    await addRoutes(app, { auth, apiKeys, store, queue, live, schedules, webhooks, redis, keyPrefix, log, opts, port: () => listeningPort, baseUrl: () => baseUrl, ...(inProcess ? { localAddress: () => IN_PROCESS_ADDRESS } : {}) });
    if (inProcess) await app.ready();
    else address = await app.listen({ port: opts.port, host: opts.host ?? '127.0.0.1' });
  } catch (error) {
    await close();
    throw error;
  }
  let url: string | undefined;
  if (address !== undefined) {
    const listening = new URL(address);
    listeningPort = Number(listening.port);
    url = `http://${listening.hostname === '0.0.0.0' || listening.hostname === '[::]' ? '127.0.0.1' : listening.hostname}:${listening.port}`;
    baseUrl = url;
  }
  // A change cut short (the process stopped between the store and the scheduler) is put right.
  await schedules.reconcile().catch((error: unknown) => log.error({ err: String(error) }, 'could not reconcile the schedules'));
  if (url === undefined) {
    log.info({ origin: IN_PROCESS_ORIGIN, queue: opts.queueName, artifactsDir: opts.artifactsDir ?? null }, 'local API started in process (no socket)');
    return { inject: (request) => app.inject(request), routes, close };
  }
  log.info({ url, queue: opts.queueName, artifactsDir: opts.artifactsDir ?? null }, 'local API listening');
  return { url, routes, close };
}

/** `GET /login?token=…`: a token the query does not give, or gives twice, is no token. */
const loginQuery = z.object({ token: z.string().optional().catch(undefined) });

interface Parts {
  auth: Auth;
  apiKeys: ApiKeyStore;
  store: Store;
  queue: JobQueue;
  live: LiveHub;
  schedules: Schedules;
  webhooks: Webhooks;
  redis: Redis;
  keyPrefix: string;
  log: Logger;
  opts: LocalServerOptions | InProcessServerOptions;
  port: () => number;
  baseUrl: () => string;
  /** In process: the local address a request without a socket arrived on (default: its socket's). */
  localAddress?: () => string;
}

/** The plugins, the access hooks and every route, on the parts `startLocalServer` opened. */
export async function addRoutes(app: App, { auth, apiKeys, store, queue, live, schedules, webhooks, redis, keyPrefix, log, opts, port, baseUrl, localAddress }: Parts): Promise<void> {
  // `request.cookies`, parsed before the access hook reads the session cookie.
  await app.register(fastifyCookie);
  // First the host (DNS rebinding), then who may come in: both on the route Fastify matched.
  app.addHook('onRequest', hostGuard(port, opts.publicHosts ?? [], localAddress));
  app.addHook('onRequest', bearerAsServiceKey);
  app.addHook('onRequest', accessCheck(auth));

  // The OpenAPI document is made from the routes' schemas (openapi.ts); its components are added as shared schemas.
  for (const schema of componentSchemas()) app.addSchema(schema);
  await app.register(fastifySwagger, swaggerOptions);
  const artifacts = opts.artifacts ?? (opts.artifactsDir ? createFolderEraser(opts.artifactsDir) : undefined);
  addWorkflowRoutes(app, { store, queue, logger: log, schedules, ...(artifacts ? { artifacts } : {}), ...(opts.tracing ? { tracing: opts.tracing } : {}), allowEverySecond: opts.allowEverySecond ?? false, ...(opts.inputKeys ? { inputKeys: opts.inputKeys } : {}) });
  addPublishRoutes(app, { store, schedules, logger: log });
  addExecutionRoutes(app, { store, logger: log, runCost: createRunCostReader(opts.artifactsDir, log) });
  addHumanRoutes(app, { store, redis, queuePrefix: opts.queuePrefix, queueName: opts.queueName, keyPrefix, logger: log });
  addSessionRoutes(app, { auth, baseUrl });
  addKeyRoutes(app, { auth, keys: apiKeys, logger: log });
  addProfileRoutes(app, opts.profiles);
  webhooks.addRoutes(app, store);
  addMcpRoute(app, { baseUrl, logger: log });
  await addDashboardRoutes(app);
  addArtifactRoutes(app, opts.artifactsDir);

  let openApi: string | undefined;
  app.route({
    method: ['GET', 'HEAD'],
    url: '/openapi.json',
    config: OPERATOR,
    schema: { hide: true },
    handler: async (_request, reply) => {
      openApi ??= JSON.stringify(app.swagger());
      return reply.headers({ 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache' }).send(openApi);
    },
  });
  app.route({ method: ['GET', 'HEAD'], url: '/healthz', config: PUBLIC, schema: { hide: true, response: { 200: answer('Alive.', z.object({ status: z.literal('ok') })) } }, handler: async () => ({ status: 'ok' as const }) });
  app.get('/login', { config: PUBLIC, schema: { hide: true, querystring: loginQuery } }, async (request, reply) => {
    const outcome = await redeemLoginLink(auth, request.query.token ?? null, request);
    if (outcome.status === 303) return reply.code(303).headers({ Location: outcome.location, 'Set-Cookie': outcome.cookie, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).send();
    return reply.code(401).headers({ 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).send(outcome.page);
  });

  /** A running execution streams live; one that ended (or never ran) just says so. */
  app.get('/live/executions/:executionId', {
    config: OPERATOR,
    schema: {
      summary: 'Live view of a running execution (server-sent events; the dashboard reads it)',
      description:
        'Events: `frame` (a JPEG screen, base64, a few per second while the page changes), `events` (a JSON array of `{ seq, line }`: logs.jsonl lines; a line may come twice, keep one per seq), `end` (the run is over). Frames travel from the worker only while someone watches.',
      params: pathParams('executionId'),
      response: { 200: { description: 'The stream.', content: { 'text/event-stream': { schema: z.string() } } }, 404: notFoundAnswer, ...commonErrors },
    },
  }, async (request, reply) => {
    const { executionId } = request.params;
    const execution = await store.getExecution(executionId);
    if (!execution) throw notFound(['path', 'executionId'], 'execution');
    if (execution.status === 'completed' || execution.status === 'failed') {
      return reply.headers({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' }).send('event: end\ndata: {}\n\n');
    }
    // The hub writes the stream itself, for as long as the viewer stays.
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
    await live.serve(executionId, request.raw, reply.raw);
  });
}
