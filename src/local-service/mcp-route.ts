import type { FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createClient } from '../client/index.js';
import { createMcpServer } from '../mcp/mcp-server.js';
import type { Logger } from '../telemetry/types.js';
import { OPERATOR_KEY } from './access.js';
import type { App } from './app.js';

/**
 * `POST /mcp` (docs/mcp.md): the MCP server over streamable HTTP, stateless (one server per
 * request, no session), for the key the request carries — `X-Service-Key` or
 * `Authorization: Bearer <key>` — checked by the access hook like any key-only route; its tools
 * call the API with that same key, so they can do what the key can and nothing more.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route also takes its key as `Authorization: Bearer <key>` (mcp-route.ts). */
    bearer?: boolean;
  }
}

/** `onRequest`, before the access hook: on a route that takes a bearer key, it is read as X-Service-Key. */
export async function bearerAsServiceKey(request: FastifyRequest): Promise<void> {
  if (request.routeOptions.config.bearer !== true || request.headers['x-service-key'] !== undefined) return;
  const match = /^Bearer +(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (match) request.headers['x-service-key'] = match[1];
}

export function addMcpRoute(app: App, deps: { baseUrl: () => string; logger: Logger }): void {
  app.post('/mcp', { config: { ...OPERATOR_KEY, bearer: true }, schema: { hide: true } }, async (request, reply) => {
    const apiKey = String(request.headers['x-service-key']);
    const server = await createMcpServer({ client: createClient({ baseUrl: deps.baseUrl(), apiKey }), baseUrl: deps.baseUrl(), apiKey });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    reply.hijack();
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body).catch((error: unknown) => deps.logger.warn({ err: String(error) }, 'MCP request failed'));
  });
  const notAllowed = async (_request: FastifyRequest, reply: import('fastify').FastifyReply) =>
    reply.code(405).header('Allow', 'POST').send({ detail: [{ loc: ['method'], msg: 'the MCP endpoint is stateless: POST only', type: 'method_not_allowed' }] });
  app.get('/mcp', { config: { ...OPERATOR_KEY, bearer: true }, schema: { hide: true } }, notAllowed);
  app.delete('/mcp', { config: { ...OPERATOR_KEY, bearer: true }, schema: { hide: true } }, notAllowed);
}
