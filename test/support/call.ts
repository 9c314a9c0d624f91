import type { z } from 'zod';

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

/**
 * A `Call` to the API at `baseUrl` (a function for a server that restarts on another port).
 * `headers` go with every request unless the request names its own; a body that is a string is
 * sent as it is (for malformed JSON), any other as JSON, both with `Content-Type: application/json`.
 */
export function httpCall(baseUrl: string | (() => string), headers: Record<string, string> = {}): Call {
  const request: Request<unknown> = async (method, path, body, own = headers) => {
    const init: RequestInit = { method, headers: { ...own, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) } };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const response = await fetch(`${typeof baseUrl === 'string' ? baseUrl : baseUrl()}${path}`, init);
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined, headers: response.headers };
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
