import http from 'node:http';
import type { InjectOptions } from 'fastify';
import type { z } from 'zod';
import type { InProcessServer } from '../../src/local-service/server.js';

/**
 * Requests to an HTTP API (the local API, `serve`) and their answers, for tests: one helper in
 * place of a `call()` written again in each file. An answer's body is JSON, and it is typed only
 * by the contract's schema of it (src/contract/): `call.as(schema)` reads the body with the
 * schema, so the test gets the type the route declares and a body of another shape fails the test
 * where it is read. Without a schema the body is `unknown`.
 *
 * The body the test reads is the one the server sent, not the schema's parse of it: a parse drops
 * the keys a schema does not name, so an assertion that a field is absent (a secret, an internal
 * id) would pass on the parse whatever the server sent.
 */

export interface Answer<T = unknown> {
  status: number;
  /** The JSON body; undefined when the body is empty (a 204). */
  body: T;
  headers: Headers;
}

export type Request<T> = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer<T>>;

export interface Call extends Request<unknown> {
  /** The same request, its answer's body read with `schema`. */
  as<S extends z.ZodType>(schema: S): Request<z.input<S>>;
}

/** One request as both transports send it: the body already text. */
interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  payload: string | undefined;
}

/** What a transport hands back: the body's text, read as JSON by `callOver`. */
interface Received {
  status: number;
  text: string;
  headers: Headers;
}

/**
 * A `Call` to the API at `baseUrl` over the network, with `fetch` (a function for a server that
 * restarts on another port). `headers` go with every request unless the request names its own; a
 * body that is a string is sent as it is (for malformed JSON), any other as JSON, both with
 * `Content-Type: application/json`.
 */
export function httpCall(baseUrl: string | (() => string), headers: Record<string, string> = {}): Call {
  return callOver(async ({ method, path, headers: sent, payload }) => {
    const init: RequestInit = { method, headers: sent };
    if (payload !== undefined) init.body = payload;
    const response = await fetch(`${typeof baseUrl === 'string' ? baseUrl : baseUrl()}${path}`, init);
    return { status: response.status, text: await response.text(), headers: response.headers };
  }, headers);
}

/** A server reached without a socket: `startLocalServer({ listen: false, ... })`. */
export type Injectable = Pick<InProcessServer, 'inject'>;
type InjectMethod = NonNullable<InjectOptions['method']>;

/**
 * The same `Call` to a server in process, through Fastify's `inject` (no socket, no HTTP client):
 * `server` is the server, or a function for one that restarts. Headers and bodies as `httpCall`
 * sends them; the request names the authority `inject` gives by default (`localhost:80`), the one
 * an in-process server answers as (IN_PROCESS_ORIGIN).
 */
export function injectCall(server: Injectable | (() => Injectable), headers: Record<string, string> = {}): Call {
  return callOver(async ({ method, path, headers: sent, payload }) => {
    const target = typeof server === 'function' ? server() : server;
    const response = await target.inject({ method: injectMethod(method), url: path, headers: sent, ...(payload === undefined ? {} : { payload }) });
    return { status: response.statusCode, text: response.body, headers: headersOf(response.headers) };
  }, headers);
}

function injectMethod(method: string): InjectMethod {
  const upper = method.toUpperCase();
  if (!isInjectMethod(upper)) throw new Error(`inject cannot send the method ${method}`);
  return upper;
}

function isInjectMethod(method: string): method is InjectMethod {
  return http.METHODS.includes(method);
}

/** An answer's headers as `fetch` hands them over: a `Headers`, each `Set-Cookie` kept. */
function headersOf(raw: Record<string, string | string[] | number | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, String(one));
  }
  return headers;
}

/** A `Call` on `send`, one transport: the request's headers and body made, the answer read. */
function callOver(send: (request: Sent) => Promise<Received>, headers: Record<string, string>): Call {
  const request: Request<unknown> = async (method, path, body, own = headers) => {
    const received = await send({
      method,
      path,
      headers: { ...own, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: received.status, body: received.text ? (JSON.parse(received.text) as unknown) : undefined, headers: received.headers };
  };
  return Object.assign(request, {
    as<S extends z.ZodType>(schema: S): Request<z.input<S>> {
      return async (method, path, body, own) => {
        const answer = await request(method, path, body, own);
        return { ...answer, body: checked(schema, answer.body) };
      };
    },
  });
}

/** `body` when `schema` accepts it, as sent (see above); a body of another shape fails the test. */
function checked<S extends z.ZodType>(schema: S, body: unknown): z.input<S> {
  const read = schema.safeParse(body);
  if (!read.success) throw new Error(`the answer does not have the contract's shape: ${read.error.message}\n${JSON.stringify(body)?.slice(0, 2000)}`);
  return body as z.input<S>;
}
