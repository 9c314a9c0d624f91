import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createClient } from '../client/index.js';
import { createMcpServer } from './mcp-server.js';

/**
 * `execution-worker mcp` (docs/mcp.md): the MCP server over stdio for one key, `SERVICE_KEY`,
 * talking to the local API at `API_BASE_URL` over HTTP. stdout carries the protocol alone; a word
 * for a person goes to stderr. Answers when stdin ends.
 */
export async function runMcpStdio(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const apiKey = env.SERVICE_KEY?.trim();
  const baseUrl = env.API_BASE_URL?.trim();
  const missing = [...(apiKey ? [] : ['SERVICE_KEY (the API key the tools act with)']), ...(baseUrl ? [] : ['API_BASE_URL (the local API, e.g. http://127.0.0.1:8080)'])];
  if (missing.length > 0 || !apiKey || !baseUrl) {
    process.stderr.write(`execution-worker mcp needs ${missing.join(' and ')}\n`);
    return 2;
  }
  const client = createClient({ baseUrl, apiKey });
  // The key is checked once at start: a wrong one stops here instead of failing every tool.
  const probe = await client.GET('/api/workflows', { params: { query: { limit: 1 } } }).catch((error: unknown) => ({ response: { status: 0 }, error }));
  if (probe.response.status !== 200) {
    process.stderr.write(`execution-worker mcp: the API at ${baseUrl} refused SERVICE_KEY or is out of reach (HTTP ${probe.response.status})\n`);
    return 2;
  }
  const server = await createMcpServer({ client, baseUrl, apiKey });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close();
  return 0;
}
