import diagnostics from 'node:diagnostics_channel';
import type { FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Access } from '../../src/local-service/access.js';
import type { ServedRoute } from '../../src/local-service/app.js';
import { API_KEY, startHarness, type Harness } from './local-api-harness.js';
import { rawRequest, type RawResponse } from './local-api-raw-http.js';
import { SPELLINGS } from './local-api-spellings.js';

/**
 * The access matrix (docs/security.md#the-local-service): every route the server really serves
 * (its own route table, not a list here) × every spelling of its path × every kind of
 * credential, sent byte for byte over a socket. Whether a request reached a handler is not
 * guessed from the status: Fastify announces every handler it enters on the diagnostics channel
 * `tracing:fastify.request.handler:start`, and the test counts those announcements per request.
 * Which route a spelling reaches is asked of find-my-way, Fastify's own router, with Fastify's
 * options; the rule of that route must then hold:
 *
 * - without a valid credential (none, a wrong key, a revoked key), no handler but a public
 *   route's is ever entered, and every other request gets the same answer whether its path names
 *   a route or not;
 * - a key reaches every route a spelling routes to;
 * - a dashboard session reaches every route but the key-only ones (the worker's reports, signing
 *   in, making a key), and never those;
 * - a body is read only as `application/json`: any other type is 415 and no handler runs.
 */

let h: Harness;
let address: string;
/** Handler entries (the route's pattern), by the request's `x-matrix-id`. */
const entered = new Map<string, string[]>();
const onHandlerStart = (message: unknown): void => {
  const { request, route } = message as { request: FastifyRequest; route: { url: string } };
  const id = request.headers['x-matrix-id'];
  if (typeof id !== 'string') return;
  entered.set(id, [...(entered.get(id) ?? []), route.url]);
};

/** The routes that are public by the contract; every other one takes a credential. */
const PUBLIC_ROUTES = ['GET /healthz', 'HEAD /healthz', 'GET /login', 'GET /', 'HEAD /', 'GET /dashboard/:file', 'HEAD /dashboard/:file'];
/** Routes that take a key and never a session: the worker's reports, signing in, making a key. */
const KEY_ONLY_ROUTES = [
  'POST /api/executions/:execution_uuid/started',
  'POST /api/executions/:execution_uuid/completed',
  'POST /api/executions/:execution_uuid/failed',
  'POST /api/executions/:execution_uuid/waiting',
  'POST /api/executions/:execution_uuid/resumed',
  'POST /api/session',
  'POST /api/keys',
  // The MCP endpoint acts with the caller's key (docs/mcp.md): a session has none to lend it.
  'POST /mcp',
  'GET /mcp',
  'DELETE /mcp',
];

type CredentialKind = 'none' | 'wrong key' | 'revoked key' | 'session' | 'bootstrap key' | 'dashboard key';
const CREDENTIALS: readonly CredentialKind[] = ['none', 'wrong key', 'revoked key', 'session', 'bootstrap key', 'dashboard key'];

let dashboardKey: string;
let revokedKey: string;
let requestCount = 0;

beforeAll(async () => {
  h = await startHarness();
  address = new URL(h.server.url).host;
  diagnostics.subscribe('tracing:fastify.request.handler:start', onHandlerStart);
  dashboardKey = (await h.makeKey('matrix')).key;
  const revoked = await h.makeKey('matrix revoked');
  revokedKey = revoked.key;
  expect((await h.call('DELETE', `/api/keys/${revoked.id}`)).status).toBe(204);
});

afterAll(async () => {
  diagnostics.unsubscribe('tracing:fastify.request.handler:start', onHandlerStart);
  await h?.close();
});

const key = (route: Pick<ServedRoute, 'method' | 'url'>): string => `${route.method} ${route.url}`;

/** A path that reaches `route`: its parameters filled in. */
function concretePath(url: string): string {
  if (url === '/dashboard/:file') return '/dashboard/app.js';
  return url.replace(/:[A-Za-z_]+/g, 'x1').replace('*', 'executions/e1/output.json');
}

/** Bodies each request schema accepts, so that a request the access rule lets in reaches its handler. */
function exampleBody(schema: string | undefined): unknown {
  const at = new Date().toISOString();
  switch (schema) {
    case undefined:
      return undefined;
    case 'WorkflowCreate':
      return { prompt: 'p', allowedDomains: ['a.test'] };
    case 'WorkflowUpdate':
      return { name: 'renamed' };
    case 'ExecuteRequest':
    case 'LoginLinkRequest':
      return {};
    case 'StartedReport':
      return { startedAt: at };
    case 'CompletedReport':
      return { completedAt: at, durationMs: 1, nSteps: 0, nAgentActions: 0, nScreenshots: 0 };
    case 'FailedReport':
      return { failedAt: at, error: { code: 'internal', message: 'x' } };
    case 'WaitingReport':
      return { waitingAt: at, kind: 'question', question: 'q' };
    case 'ResumedReport':
      return { resumedAt: at };
    case 'AnswerRequest':
      return { answer: 'yes' };
    case 'LiveInput':
      return { kind: 'key', key: 'Enter' };
    case 'WebhookCreate':
      // Loopback port 9 (discard): a receiver that takes nothing, allowed as a developer's would be.
      return { url: 'http://127.0.0.1:9/hook', events: ['execution.completed'] };
    case 'ApiKeyCreate':
      requestCount += 1;
      return { name: `matrix made ${requestCount}` };
    default:
      throw new Error(`no example body for the request schema ${schema}: add one`);
  }
}

/** The request schema each route declares, as the OpenAPI document (made from the routes) names it. */
async function bodySchemas(): Promise<Map<string, string>> {
  const doc = (await h.call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { $ref: string } }> } }>> };
  const out = new Map<string, string>();
  for (const [p, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const ref = op.requestBody?.content['application/json']?.schema.$ref;
      if (ref) out.set(`${method.toUpperCase()} ${p.replace(/\{([^}]+)\}/g, ':$1')}`, ref.split('/').pop()!);
    }
  }
  return out;
}

/**
 * Fastify's router (the same find-my-way) with the app's options (Fastify's defaults, but a
 * trailing slash names the route without it: app.ts), asked which route a target reaches.
 * (`useSemicolonDelimiter` is off in both by default.)
 */
function routerOf(routes: readonly ServedRoute[]): (method: string, target: string) => ServedRoute | undefined {
  const router = FindMyWay({ ignoreTrailingSlash: true, ignoreDuplicateSlashes: false, caseSensitive: true, maxParamLength: 100 });
  for (const route of routes) router.on(route.method as 'GET', route.url, () => undefined, route);
  return (method, target) => {
    try {
      return (router.find(method as 'GET', target)?.store as ServedRoute | undefined) ?? undefined;
    } catch {
      return undefined;
    }
  };
}

function allowed(access: Access | undefined, credential: CredentialKind): boolean {
  if (access === 'public') return true;
  if (credential === 'bootstrap key' || credential === 'dashboard key') return true;
  return credential === 'session' && access !== 'key-only';
}

interface Sent {
  id: string;
  response: RawResponse;
  handlers: string[];
}

/** `contentType` null sends none; undefined sends `application/json` with a body. */
async function send(method: string, target: string, credential: CredentialKind, body: unknown, contentType?: string | null): Promise<Sent> {
  const id = String((requestCount += 1));
  const headers: Record<string, string> = { 'x-matrix-id': id };
  if (credential === 'wrong key') headers['X-Service-Key'] = `${API_KEY}-not`;
  if (credential === 'revoked key') headers['X-Service-Key'] = revokedKey;
  if (credential === 'bootstrap key') headers['X-Service-Key'] = API_KEY;
  if (credential === 'dashboard key') headers['X-Service-Key'] = dashboardKey;
  if (credential === 'session') {
    // A fresh session each time: one of the routes (DELETE /api/session) ends the one it is sent with.
    headers.Cookie = await h.signIn();
    headers.Origin = h.server.url;
  }
  const type = contentType === undefined ? (body === undefined ? null : 'application/json') : contentType;
  if (type !== null) headers['Content-Type'] = type;
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const response = await rawRequest({ method, target, address, headers, ...(text === undefined ? {} : { body: text }) });
  return { id, response, handlers: entered.get(id) ?? [] };
}

/** Runs `tasks` a few at a time. */
async function inBatches<T>(tasks: (() => Promise<T>)[], width = 6): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < tasks.length; i += width) results.push(...(await Promise.all(tasks.slice(i, i + width).map((t) => t()))));
  return results;
}

describe('the access matrix', () => {
  it('covers routes that each declare their access; the public ones are exactly the contract\'s', () => {
    const routes = h.server.routes;
    expect(routes.length).toBeGreaterThan(35);
    expect(routes.filter((r) => r.access === undefined).map(key)).toEqual([]);
    expect(routes.filter((r) => r.access === 'public').map(key).sort()).toEqual([...PUBLIC_ROUTES].sort());
    expect(routes.filter((r) => r.access === 'key-only').map(key).sort()).toEqual([...KEY_ONLY_ROUTES].sort());
  });

  it('lets no request without a valid credential reach a handler but a public one, in any spelling; a key reaches every routed spelling; a session never a key-only route', async () => {
    const routes = h.server.routes;
    const reach = routerOf(routes);
    const schemas = await bodySchemas();
    // Paths no route serves, beside the served ones: their answers must not differ.
    const targets = [
      ...routes.map((r) => ({ method: r.method, path: concretePath(r.url), schema: schemas.get(key(r)) })),
      { method: 'GET', path: '/api/nope', schema: undefined },
      { method: 'POST', path: '/api/workflows/x1/nope', schema: undefined },
      { method: 'GET', path: '/nope', schema: undefined },
      { method: 'PUT', path: '/api/workflows', schema: undefined },
    ];

    const faults: string[] = [];
    /** Per spelling (and HEAD apart), the answers to requests without a credential that reached nothing public. */
    const strangerAnswers = new Map<string, Set<string>>();
    let sent = 0;
    let strangers = 0;
    for (const credential of CREDENTIALS) {
      const tasks = targets.flatMap(({ method, path, schema }) =>
        SPELLINGS.map((spelling) => async () => {
          const target = spelling.spell(path, h.server.url);
          const reached = reach(method, target);
          const { response, handlers } = await send(method, target, credential, exampleBody(schema));
          const label = `${credential}: ${method} ${target} → ${response.status}, entered [${handlers.join(', ')}]`;
          const expected = reached && allowed(reached.access, credential) ? [reached.url] : [];
          if (JSON.stringify(handlers) !== JSON.stringify(expected)) faults.push(`${label}, expected [${expected.join(', ')}]`);
          const stranger = credential === 'none' || credential === 'wrong key' || credential === 'revoked key';
          if (stranger && reached?.access !== 'public') {
            strangers += 1;
            // A HEAD answer has no body: compared among HEAD answers.
            const group = method === 'HEAD' ? `${spelling.name} (HEAD)` : spelling.name;
            const answers = strangerAnswers.get(group) ?? new Set<string>();
            answers.add(`${response.status} ${response.body}`);
            strangerAnswers.set(group, answers);
          }
        }),
      );
      sent += tasks.length;
      await inBatches(tasks);
    }
    expect(faults).toEqual([]);
    // One answer per spelling for a stranger, whether the path names a route or not: nothing leaks.
    for (const [spelling, answers] of strangerAnswers) expect([...answers], spelling).toEqual([[...answers][0]]);
    expect(strangerAnswers.get('as written')).toEqual(new Set([`401 ${JSON.stringify({ detail: [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }] })}`]));
    expect(sent).toBeGreaterThan(4_000);
    expect(strangers).toBeGreaterThan(2_000);
  });

  it('reads a body only as application/json: any other type is 415 and reaches no handler, whoever sends it', async () => {
    const schemas = await bodySchemas();
    const withBody = h.server.routes.filter((r) => ['POST', 'PATCH', 'PUT', 'DELETE'].includes(r.method));
    expect(withBody.length).toBeGreaterThan(15);
    const types = ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'text/json', null];
    const faults: string[] = [];
    const tasks = withBody.flatMap((route) =>
      (['none', 'session', 'bootstrap key'] as const).flatMap((credential) =>
        types.map((type) => async () => {
          const body = exampleBody(schemas.get(key(route))) ?? {};
          const { response, handlers } = await send(route.method, concretePath(route.url), credential, body, type);
          const label = `${credential}: ${key(route)} as ${String(type)} → ${response.status}, entered [${handlers.join(', ')}]`;
          if (handlers.length > 0) faults.push(label);
          const expectedStatus = allowed(route.access, credential) ? 415 : 401;
          if (response.status !== expectedStatus) faults.push(`${label}, expected ${expectedStatus}`);
        }),
      ),
    );
    await inBatches(tasks);
    expect(faults).toEqual([]);
    expect(tasks.length).toBeGreaterThan(300);
  });
});
