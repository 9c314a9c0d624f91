import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { ApiClient, Execution } from '../client/index.js';

/**
 * The MCP server (docs/mcp.md), by the official SDK: the tools `list_workflows`, `run_workflow`
 * and `get_execution`, each a call of the local API through the typed client with the caller's
 * own key, so an agent has exactly the access of that key (a missing or wrong key is the API's
 * 401). Served over stdio (`execution-worker mcp`, mcp-stdio.ts) and over streamable HTTP on
 * `serve` (`POST /mcp`, local-service/mcp-route.ts). Inputs are checked by the SDK against each
 * tool's zod schema: a bad one is the protocol's own InvalidParams error naming the field.
 */

export interface McpServerOptions {
  client: ApiClient;
  /** The service's address, for the live stream a waiting run reads its progress from. */
  baseUrl: string;
  apiKey: string;
  /** Pause between polls of a waited-for execution. Default 1000 ms. */
  pollIntervalMs?: number;
}

const VERSION = '0.1.0';

function text(value: unknown) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(value, null, 2) }], structuredContent: value as Record<string, unknown> };
}

/** An API error answer as a tool error the agent can read. */
function apiError(what: string, status: number, error: unknown) {
  return { content: [{ type: 'text' as const, text: `${what}: HTTP ${status} ${JSON.stringify(error)}` }], isError: true };
}

/** The workflows and their payload schemas, written into run_workflow's description. */
async function workflowCatalogue(client: ApiClient): Promise<string> {
  const listed = await client.GET('/api/workflows', { params: { query: { limit: 100 } } });
  if (!listed.data) return 'The workflows could not be listed.';
  const lines = listed.data.items.map((w) => {
    const schema = (w.current_version?.specification as { payloadSchema?: unknown } | undefined)?.payloadSchema ?? null;
    return `- ${w.slug} (${w.workflow_uuid}): ${w.name}. inputPayload schema: ${JSON.stringify(schema)}`;
  });
  return lines.length === 0 ? 'No workflow exists yet.' : lines.join('\n');
}

export async function createMcpServer(opts: McpServerOptions): Promise<McpServer> {
  const { client } = opts;
  const server = new McpServer({ name: 'execution-worker', version: VERSION });

  server.registerTool('list_workflows', { description: 'Lists the workflows: id, slug, name, description.', inputSchema: {} }, async () => {
    const { data, error, response } = await client.GET('/api/workflows', { params: { query: { limit: 100 } } });
    if (!data) return apiError('list_workflows', response.status, error);
    return text({ workflows: data.items.map((w) => ({ id: w.workflow_uuid, slug: w.slug, name: w.name, description: w.description })) });
  });

  server.registerTool('get_execution', { description: 'One execution, as GET /api/executions/{id} answers it.', inputSchema: { id: z.string().min(1).describe('The execution id.') } }, async ({ id }) => {
    const { data, error, response } = await client.GET('/api/executions/{executionId}', { params: { path: { executionId: id } } });
    if (!data) return apiError('get_execution', response.status, error);
    return text(data);
  });

  server.registerTool('run_workflow', {
    description: `Executes a workflow (by slug or id) with an input payload. With wait: true it answers when the execution ends, with its output and artifact links, and sends progress notifications meanwhile. The workflows and their inputPayload schemas:\n${await workflowCatalogue(client)}`,
    inputSchema: {
      workflow: z.string().min(1).describe('The workflow\'s slug or id.'),
      inputPayload: z.unknown().optional().describe('The input, valid under the workflow\'s payload schema.'),
      wait: z.boolean().optional().describe('Answer when the execution ends (default false: answer at once with the queued execution).'),
    },
  }, async ({ workflow, inputPayload, wait }, extra) => {
    const workflowId = await resolveWorkflow(client, workflow);
    if (!workflowId) return { content: [{ type: 'text' as const, text: `no workflow has the slug or id "${workflow}"` }], isError: true };
    const started = await client.POST('/api/workflows/{workflowId}/execute', { params: { path: { workflowId } }, body: inputPayload === undefined ? {} : { inputPayload: inputPayload as never } });
    if (!started.data) return apiError('run_workflow', started.response.status, started.error);
    const execution = started.data as Execution;
    if (!wait) return text(execution);
    const token = extra._meta?.progressToken;
    let progress = 0;
    const notify = async (message: string) => {
      if (token === undefined) return;
      progress += 1;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } }).catch(() => undefined);
    };
    const watching = new AbortController();
    const stream = token === undefined ? Promise.resolve() : followLog(opts, execution.execution_uuid, notify, AbortSignal.any([watching.signal, extra.signal]));
    const ended = await client.waitForExecution(execution.execution_uuid, { intervalMs: opts.pollIntervalMs ?? 1000, signal: extra.signal });
    watching.abort();
    await stream;
    if (!ended.data) return apiError('run_workflow', ended.status, ended.error);
    await notify(`execution ${ended.data.status}`);
    const output = ended.data.output_url ? await readOutput(opts, ended.data.output_url) : null;
    return text({ execution: ended.data, output, artifacts: { output: ended.data.output_url, video: ended.data.video_url, logs: ended.data.logs_url } });
  });

  return server;
}

async function resolveWorkflow(client: ApiClient, workflow: string): Promise<string | undefined> {
  const byId = await client.GET('/api/workflows/{id}', { params: { path: { id: workflow } } });
  if (byId.data) return byId.data.workflow_uuid;
  const listed = await client.GET('/api/workflows', { params: { query: { limit: 100 } } });
  return listed.data?.items.find((w) => w.slug === workflow)?.workflow_uuid;
}

/** The run's output.json, when the service serves it (its artifacts under the same key). */
async function readOutput(opts: McpServerOptions, url: string): Promise<unknown> {
  try {
    const res = await fetch(url, { headers: { 'x-service-key': opts.apiKey } });
    if (!res.ok) return null;
    return ((await res.json()) as { output?: unknown }).output ?? null;
  } catch {
    return null;
  }
}

/**
 * Follows the live stream of the execution (GET /live/executions/{id}, server-sent events) and
 * sends one progress notification per log line (each step, action, question) as the worker writes it.
 */
async function followLog(opts: McpServerOptions, executionId: string, notify: (message: string) => Promise<void>, signal: AbortSignal): Promise<void> {
  const seen = new Set<number>();
  try {
    const res = await fetch(`${opts.baseUrl.replace(/\/+$/, '')}/live/executions/${encodeURIComponent(executionId)}`, { headers: { 'x-service-key': opts.apiKey }, signal });
    if (!res.ok || !res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (event === 'end') return;
        if (event !== 'events') continue;
        for (const { seq, line } of JSON.parse(data) as { seq: number; line: Record<string, unknown> }[]) {
          if (seen.has(seq)) continue;
          seen.add(seq);
          await notify(describeLine(line));
        }
      }
    }
  } catch {
    // Progress is best effort: the answer comes from polling.
  }
}

function describeLine(line: Record<string, unknown>): string {
  const name = line.event ?? line.msg ?? line.type ?? 'log';
  const step = line.step === undefined ? '' : ` step ${String(line.step)}`;
  const action = typeof line.action === 'string' ? `: ${line.action}` : typeof line.name === 'string' ? `: ${line.name}` : '';
  return `${String(name)}${step}${action}`;
}
