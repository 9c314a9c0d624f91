import diagnostics from 'node:diagnostics_channel';
import type { FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyCreated } from '../../src/contract/access.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { OPERATOR, OPERATOR_KEY, PUBLIC, WORKER_READ, WORKER_REPORT, type Access } from '../../src/local-service/access.js';
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
 * - a key reaches every route whose declared roles it has, and no other: a key of API_KEYS (both
 *   roles) every route; an operator's dashboard key every route but the worker's reports; a
 *   worker's dashboard key the worker's reports and what the worker reads, nothing else;
 * - a dashboard session (an operator's) reaches every route an operator's key does but the
 *   key-only ones (signing in, making a key), and never those;
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
/** The worker's reports: a worker's key, never a session (contract §2). */
const WORKER_REPORT_ROUTES = [
  'POST /api/executions/:execution_uuid/started',
  'POST /api/executions/:execution_uuid/completed',
  'POST /api/executions/:execution_uuid/failed',
  'POST /api/executions/:execution_uuid/waiting',
  'POST /api/executions/:execution_uuid/resumed',
];
/** What the worker reads: a worker's or an operator's credential. */
const WORKER_READ_ROUTES = ['GET /api/executions/:executionId', 'GET /api/workflows/:workflow_uuid/versions'];
/** An operator's key, never a session: signing in. A session may make a key (recorded as its signing key's). */
// The MCP endpoint acts with the caller's key (docs/mcp.md): a session has none to lend it.
const OPERATOR_KEY_ROUTES = ['POST /api/session', 'POST /mcp', 'GET /mcp', 'DELETE /mcp'];

type CredentialKind = 'none' | 'wrong key' | 'revoked key' | 'made with a revoked key' | 'session' | 'bootstrap key' | 'dashboard key' | 'worker key';
const CREDENTIALS: readonly CredentialKind[] = ['none', 'wrong key', 'revoked key', 'made with a revoked key', 'session', 'bootstrap key', 'dashboard key', 'worker key'];
/** The roles each credential has. */
const ROLES: Record<CredentialKind, readonly string[]> = {
  none: [],
  'wrong key': [],
  'revoked key': [],
  'made with a revoked key': [],
  session: ['operator'],
  'bootstrap key': ['operator', 'worker'],
  'dashboard key': ['operator'],
  'worker key': ['worker'],
};

let dashboardKey: string;
let workerKey: string;
let revokedKey: string;
let orphanKey: string;
let requestCount = 0;

beforeAll(async () => {
  h = await startHarness({ network: true });
  address = new URL(h.server.url).host;
  diagnostics.subscribe('tracing:fastify.request.handler:start', onHandlerStart);
  dashboardKey = (await h.makeKey('matrix')).key;
  const worker = await h.api.as(apiKeyCreated)('POST', '/api/keys', { name: 'matrix worker', role: 'worker' });
  expect(worker.status).toBe(201);
  workerKey = worker.body.key;
  const revoked = await h.makeKey('matrix revoked');
  revokedKey = revoked.key;
  // A key made with the revoked key, before it was revoked.
  orphanKey = (await h.makeKey('matrix orphan', revokedKey)).key;
  expect((await h.api('DELETE', `/api/keys/${revoked.id}`)).status).toBe(204);
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
  const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
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
      // find-my-way leaves a route's store untyped: read it as unknown, and name the route registered with it.
      const found: { store: unknown } | null = router.find(method as 'GET', target);
      return routes.find((route) => route === found?.store);
    } catch {
      return undefined;
    }
  };
}

function allowed(access: Access | undefined, credential: CredentialKind): boolean {
  if (access?.via === 'public') return true;
  // A route that declared nothing is reached by nobody.
  if (access === undefined) return false;
  if (credential === 'session' && access.via === 'key-only') return false;
  return access.roles.some((role) => ROLES[credential].includes(role));
}

/** The routes whose declaration is `decl` (by value). */
const declaredAs = (routes: readonly ServedRoute[], decl: Access) => routes.filter((r) => JSON.stringify(r.access) === JSON.stringify(decl)).map(key).sort();

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
  if (credential === 'worker key') headers['X-Service-Key'] = workerKey;
  if (credential === 'made with a revoked key') headers['X-Service-Key'] = orphanKey;
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
    expect(declaredAs(routes, PUBLIC.access)).toEqual([...PUBLIC_ROUTES].sort());
    expect(declaredAs(routes, WORKER_REPORT.access)).toEqual([...WORKER_REPORT_ROUTES].sort());
    expect(declaredAs(routes, WORKER_READ.access)).toEqual([...WORKER_READ_ROUTES].sort());
    expect(declaredAs(routes, OPERATOR_KEY.access)).toEqual([...OPERATOR_KEY_ROUTES].sort());
    // Every other route is an operator's, by key or session; none declares a role of its own.
    const rest = routes.filter((r) => ![...PUBLIC_ROUTES, ...WORKER_REPORT_ROUTES, ...WORKER_READ_ROUTES, ...OPERATOR_KEY_ROUTES].includes(key(r)));
    expect(rest.filter((r) => JSON.stringify(r.access) !== JSON.stringify(OPERATOR.access)).map(key)).toEqual([]);
  });

  it('lets no request without a valid credential reach a handler but a public one, in any spelling; a key reaches the routes of its roles only; a session never a key-only route', async () => {
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
          const stranger = ROLES[credential].length === 0;
          if (stranger && reached?.access?.via !== 'public') {
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
