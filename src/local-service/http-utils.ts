import type http from 'node:http';

/**
 * Request and response helpers of the local API. Every error answers the seed's error shape,
 * `{ "detail": [{ "loc": [...], "msg": "...", "type": "..." }] }`, whatever its status (401,
 * 404, 409, 413, 422), so a client reads one shape only.
 */

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** An answer other than success, thrown by handlers and written by the server. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  readonly detail: ValidationIssue[];

  constructor(status: number, detail: ValidationIssue[]) {
    super(detail.map((d) => d.msg).join('; '));
    this.status = status;
    this.detail = detail;
  }
}

export const notFound = (loc: (string | number)[], what: string): HttpError => new HttpError(404, [{ loc, msg: `${what} not found`, type: 'not_found' }]);

export const unprocessable = (detail: ValidationIssue[]): HttpError => new HttpError(422, detail);

/** Largest JSON body accepted: payloads and schemas are small; anything larger is a mistake. */
export const MAX_BODY_BYTES = 1_048_576;

/**
 * Reads a JSON body. An empty body reads as `undefined` (several endpoints take an optional
 * body); malformed JSON answers 422 like any other validation failure.
 */
export async function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new HttpError(413, [{ loc: ['body'], msg: `body larger than ${MAX_BODY_BYTES} bytes`, type: 'too_large' }]);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw unprocessable([{ loc: ['body'], msg: `invalid JSON: ${error instanceof Error ? error.message : String(error)}`, type: 'json_invalid' }]);
  }
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendError(res: http.ServerResponse, error: HttpError): void {
  sendJson(res, error.status, { detail: error.detail });
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
