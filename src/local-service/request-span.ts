import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatTraceParent, parseTraceParent } from '../domain/trace-context.js';
import type { TraceAttributes, TraceSpan, Tracing } from '../telemetry/types.js';
import { HttpError } from './http-errors.js';

/**
 * A route's work as a server span (HTTP semantic conventions), a child of the caller's span when
 * the request carries a W3C `traceparent`, else the first span of a new trace
 * (docs/operations.md#traces). Only the routes that start a trace take one (the execute route):
 * the rest of the API is not traced. An answer of 4xx is the caller's mistake, not the server's,
 * so only a 5xx or an unexpected error marks the span failed, as the conventions say of servers.
 */
export async function inServerSpan<T>(tracing: Tracing, request: FastifyRequest, reply: FastifyReply, route: string, attributes: TraceAttributes, run: (span: TraceSpan) => Promise<T>): Promise<T> {
  const header = request.headers.traceparent;
  // Only what was read goes on, written as version 00: never the caller's text (a later version's
  // extra fields, however long), which tracing off would hand on into the job as it came.
  const read = typeof header === 'string' ? parseTraceParent(header) : undefined;
  const caller = read ? formatTraceParent(read) : undefined;
  const span = tracing.startSpan(`${request.method} ${route}`, {
    kind: 'server',
    parent: caller ?? null,
    attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?', 1)[0], 'url.scheme': request.protocol, ...attributes },
  });
  try {
    const result = await tracing.withSpan(span, () => run(span));
    span.setAttributes({ 'http.response.status_code': reply.statusCode });
    return result;
  } catch (error) {
    const status = error instanceof HttpError ? error.status : 500;
    span.setAttributes({ 'http.response.status_code': status });
    if (status >= 500) span.fail(error instanceof HttpError ? String(status) : error instanceof Error ? error.name : 'error', error instanceof Error ? error.message : String(error));
    throw error;
  } finally {
    span.end();
  }
}
