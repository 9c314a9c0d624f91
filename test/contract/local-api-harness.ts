import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { ProfileKeyring } from '../../src/domain/profile-crypto.js';
import type { PublicHost } from '../../src/domain/public-hosts.js';
import type { ProfileDirectory } from '../../src/local-service/profile-routes.js';
import { apiKeyCreated } from '../../src/contract/access.js';
import type { ServedRoute } from '../../src/local-service/app.js';
import { startLocalServer, type InProcessServer, type LocalServer } from '../../src/local-service/server.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { httpCall, injectCall, type Call } from '../support/call.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * A local API on a private Redis, with a BullMQ handle to inspect what it enqueued.
 *
 * By default the server listens on no socket and every request goes through Fastify's `inject`
 * (test/support/call.ts `injectCall`): the same hooks and routes, no port, no HTTP client.
 * `network: true` starts it listening on a free port and sends requests with `fetch`, for a test
 * that needs a socket: a stream (SSE), a `Host` checked against the real port, a browser, a raw
 * request written on the socket, a cookie named after a port that a restart changes.
 */

export const API_KEY = 'test-key-7f3a9c';

/** The harness's server. */
export interface HarnessServer {
  /** Where it listens: only with `network: true`; without, reading it throws (nothing listens). */
  readonly url: string;
  readonly routes: readonly ServedRoute[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  artifactsDir?: string;
  redis?: TestRedis;
  profiles?: ProfileDirectory;
  publicHosts?: PublicHost[];
  inputKeys?: ProfileKeyring;
  /** Listen on a port and send requests over it (`server.url` set); default: `inject`, no socket. */
  network?: boolean;
}

export interface Harness {
  redis: TestRedis;
  server: HarnessServer;
  queue: Queue;
  queueName: string;
  keyPrefix: string;
  artifactsDir: string | undefined;
  /**
   * Requests to the local API, as the service key unless `headers` name others (`{}`: none);
   * `api.as(schema)` reads the answer with the contract's schema (test/support/call.ts). Through
   * `inject`, or with `fetch` for `network: true`; `signIn` and `makeKey` go the same way.
   */
  api: Call;
  /** Signs a browser in with `key` (POST /api/session): the `Cookie` value of its session. */
  signIn(key?: string): Promise<string>;
  /** Makes a dashboard key named `name` with `key` (POST /api/keys): its id and the key. */
  makeKey(name: string, key?: string): Promise<{ id: string; key: string }>;
  restartServer(): Promise<void>;
  close(): Promise<void>;
}

export const silentLogger = createSilentLogger();

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const redis = opts.redis ?? (await startRedis());
  const queueName = `executions-${randomUUID().slice(0, 8)}`;
  const keyPrefix = `{api-${randomUUID().slice(0, 8)}}:`;
  const serviceOptions = { apiKeys: ['other-key', API_KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', keyPrefix, artifactsDir: opts.artifactsDir, logger: silentLogger, ...(opts.profiles ? { profiles: opts.profiles } : {}), ...(opts.publicHosts ? { publicHosts: opts.publicHosts } : {}), ...(opts.inputKeys ? { inputKeys: opts.inputKeys } : {}) };
  // One of the two is set, for as long as the harness runs (a restart replaces it).
  let listening: LocalServer | undefined;
  let inProcess: InProcessServer | undefined;
  const start = async (): Promise<HarnessServer> => {
    if (opts.network) {
      listening = await startLocalServer({ ...serviceOptions, port: 0 });
      return listening;
    }
    const started = await startLocalServer({ ...serviceOptions, listen: false });
    inProcess = started;
    return {
      get url(): string {
        throw new Error('this harness reaches its server with inject and nothing listens: start it with startHarness({ network: true }) for a URL');
      },
      routes: started.routes,
      close: () => started.close(),
    };
  };
  let server: HarnessServer | undefined;
  let queue: Queue | undefined;
  try {
    server = await start();
    queue = new Queue(queueName, { connection: { url: redis.url }, prefix: 'bull' });
  } catch (error) {
    await server?.close();
    if (!opts.redis) await redis.stop();
    throw error;
  }
  const asServiceKey = { 'X-Service-Key': API_KEY };
  const api = opts.network ? httpCall(() => listening!.url, asServiceKey) : injectCall(() => inProcess!, asServiceKey);
  const harness: Harness = {
    redis,
    server,
    queue,
    queueName,
    keyPrefix,
    artifactsDir: opts.artifactsDir,
    api,
    async signIn(key = API_KEY) {
      const answer = await api('POST', '/api/session', undefined, { 'X-Service-Key': key });
      if (answer.status !== 204) throw new Error(`sign-in answered ${answer.status}`);
      return (answer.headers.get('set-cookie') ?? '').split(';')[0]!;
    },
    async makeKey(name, key = API_KEY) {
      const made = await api('POST', '/api/keys', { name }, { 'X-Service-Key': key });
      if (made.status !== 201) throw new Error(`POST /api/keys answered ${made.status}: ${JSON.stringify(made.body)}`);
      const { id, key: secret } = apiKeyCreated.parse(made.body);
      return { id, key: secret };
    },
    async restartServer() {
      await harness.server.close();
      harness.server = await start();
    },
    async close() {
      await Promise.allSettled([harness.server.close(), queue?.close()]);
      if (!opts.redis) await redis.stop();
    },
  };
  return harness;
}

/** The seed's validation error body. */
export function expectDetailShape(body: unknown): asserts body is { detail: { loc: (string | number)[]; msg: string; type: string }[] } {
  const detail = (body as { detail?: unknown }).detail;
  if (!Array.isArray(detail) || detail.length === 0) throw new Error(`no detail[] in ${JSON.stringify(body)}`);
  for (const d of detail as Record<string, unknown>[]) {
    const ok =
      Array.isArray(d.loc) && d.loc.every((p) => typeof p === 'string' || Number.isInteger(p)) && typeof d.msg === 'string' && typeof d.type === 'string';
    if (!ok) throw new Error(`bad validation error ${JSON.stringify(d)}`);
  }
}

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
