import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_INPUT, DEMO_WORKFLOW } from '../../demo/workflow.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { loadRecording } from '../../src/model/playback-client.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import type { TestRedis } from '../support/redis.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';
import { startDaemonStack, uniqueName, type DaemonStack } from '../support/stack.js';

/**
 * The MCP server (docs/mcp.md) driven by the official MCP client, over streamable HTTP
 * (`POST /mcp` on serve) and over stdio (`execution-worker mcp`), against a real worker replaying
 * the demo's recording on the demo shop: the tools listed, a workflow run with `wait` to its end
 * with progress heard, an execution read, a bad input and a missing key refused.
 */

const KEY = 'mcp-key';
let stack: DaemonStack<undefined>;
let redis: TestRedis;
let shop: ShopServer;
let dir: string;
let api: LocalServer;
let slug: string;

beforeAll(async () => {
  stack = await startDaemonStack({ name: 'mcp', key: KEY, env: { VIDEO_FPS: '5', SHUTDOWN_GRACE_MS: '2000' }, daemon: { recording: await loadRecording(path.resolve('demo/shop.recording.json')) } });
  ({ redis, dir, api } = stack);
}, 120_000);

// Each run on a fresh shop (the recording is of a first visit), with its own workflow.
const shops: ShopServer[] = [];
beforeEach(async () => {
  shop = await startShopServer();
  shops.push(shop);
  const res = await fetch(`${api.url}/api/workflows`, { method: 'POST', headers: { 'x-service-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify(DEMO_WORKFLOW(`${shop.origin}/`)) });
  slug = String(((await res.json()) as { slug: string }).slug);
});

afterAll(async () => {
  await Promise.allSettled([stack?.close(), ...shops.map((s) => s.close())]);
});

type ToolAnswer = { structuredContent?: Record<string, unknown>; isError?: boolean; content: { text: string }[] };

async function exercise(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(['get_execution', 'list_workflows', 'run_workflow']);
  const run = tools.find((t) => t.name === 'run_workflow')!;
  expect(run.description).toContain(slug);
  expect(run.description).toContain('"reference":{"type":"string"}');
  expect(run.inputSchema.properties).toHaveProperty('workflow');

  const listed = (await client.callTool({ name: 'list_workflows', arguments: {} })) as ToolAnswer;
  expect((listed.structuredContent?.workflows as { slug: string }[]).map((w) => w.slug)).toContain(slug);

  const progress: string[] = [];
  const ran = (await client.callTool({ name: 'run_workflow', arguments: { workflow: slug, inputPayload: DEMO_INPUT, wait: true } }, undefined, {
    onprogress: (p) => progress.push(String(p.message)),
    timeout: 240_000,
    resetTimeoutOnProgress: true,
  })) as ToolAnswer;
  expect(ran.isError).toBeFalsy();
  const execution = ran.structuredContent?.execution as { execution_uuid: string; status: string; n_steps: number };
  expect(execution).toMatchObject({ status: 'completed', n_steps: 3 });
  expect(ran.structuredContent?.output).toEqual({ orderId: 'A-1001' });
  expect(String((ran.structuredContent?.artifacts as { video: string }).video)).toContain(`/artifacts/executions/${execution.execution_uuid}/`);
  expect(progress.at(-1)).toBe('execution completed');
  expect(progress.length).toBeGreaterThan(1);

  const got = (await client.callTool({ name: 'get_execution', arguments: { id: execution.execution_uuid } })) as ToolAnswer;
  expect(got.structuredContent).toMatchObject({ execution_uuid: execution.execution_uuid, status: 'completed' });

  // A bad input: the SDK's own answer, InvalidParams (-32602) naming the field, as a tool error ( as the MCP specification asks of input
  // validation, so that a model can correct itself), naming the field.
  const bad = (await client.callTool({ name: 'get_execution', arguments: { id: 42 } })) as ToolAnswer;
  expect(bad.isError).toBe(true);
  expect(bad.content[0]?.text).toBe('MCP error -32602: Input validation error: Invalid arguments for tool get_execution: Invalid input: expected string, received number at id');
}

describe('MCP server', () => {
  it('over streamable HTTP on serve: tools, a run waited for with progress, an execution, a bad input; no key is refused', async () => {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
    const anonymous = new Client({ name: 'test', version: '1' });
    await expect(anonymous.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`)))).rejects.toThrow(/401|missing or invalid API key/);
    const wrong = await fetch(`${api.url}/mcp`, { method: 'POST', headers: { authorization: 'Bearer nope', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(wrong.status).toBe(401);
  }, 300_000);

  it('over stdio (`execution-worker mcp`): the same tools for SERVICE_KEY; without a key it does not start', async () => {
    const entry = path.resolve('test/support/cli-entry.ts');
    const transport = new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', entry, 'mcp'], env: { ...process.env, SERVICE_KEY: KEY, API_BASE_URL: api.url } as Record<string, string>, stderr: 'pipe' });
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(transport);
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
    const keyless = new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', entry, 'mcp'], env: { ...process.env, SERVICE_KEY: '', API_BASE_URL: api.url } as Record<string, string>, stderr: 'pipe' });
    const refused = new Client({ name: 'test', version: '1' });
    await expect(refused.connect(keyless)).rejects.toThrow();
    await refused.close().catch(() => undefined);
  }, 300_000);
});

describe('MCP server, where no worker takes the run', () => {
  let lone: LocalServer;
  let listener: import('node:http').Server;
  const heard: import('node:http').IncomingHttpHeaders[] = [];
  beforeAll(async () => {
    const { createServer } = await import('node:http');
    listener = createServer((req, res) => {
      heard.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"output":"from elsewhere"}');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const queueName = uniqueName('mcp-lone');
    lone = await startLocalServer({ port: 0, apiKeys: [KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', artifactsDir: path.join(dir, 'lone'), logger: createSilentLogger(), keyPrefix: `{api-${queueName}}:` });
  });
  afterAll(async () => {
    await lone?.close();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  });

  const call = async (body: Record<string, unknown>): Promise<ToolAnswer> => {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${lone.url}/mcp`), { requestInit: { headers: { 'x-service-key': KEY } } }));
    try {
      return (await client.callTool({ name: 'run_workflow', arguments: body })) as ToolAnswer;
    } finally {
      await client.close();
    }
  };
  const post = (key: string, route: string, body: unknown) =>
    fetch(`${lone.url}${route}`, { method: 'POST', headers: { 'x-service-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('a wait is bounded: after maxWaitMs it answers with the execution as it is', async () => {
    const made = (await (await post(KEY, '/api/workflows', DEMO_WORKFLOW(`${shop.origin}/`))).json()) as { slug: string };
    const answer = await call({ workflow: made.slug, inputPayload: DEMO_INPUT, wait: true, maxWaitMs: 1_000 });
    expect(answer.isError).toBeFalsy();
    expect(answer.structuredContent).toMatchObject({ ended: false, execution: { status: 'queued' } });
  }, 120_000);

  it("never sends the caller's key to an output url a worker reported: only to the service's own artifacts", async () => {
    const made = (await (await post(KEY, '/api/workflows', DEMO_WORKFLOW(`${shop.origin}/`))).json()) as { slug: string; workflow_uuid: string };
    const workerKey = ((await (await post(KEY, '/api/keys', { name: 'a worker', role: 'worker' })).json()) as { key: string }).key;
    const running = call({ workflow: made.slug, inputPayload: DEMO_INPUT, wait: true, maxWaitMs: 60_000 });
    // The worker's side, played by a worker's key: the run starts and ends with a foreign output url.
    let executionId: string | undefined;
    while (executionId === undefined) {
      const list = (await (await fetch(`${lone.url}/api/executions?workflow_uuid=${made.workflow_uuid}`, { headers: { 'x-service-key': KEY } })).json()) as { items: { execution_uuid: string }[] };
      executionId = list.items[0]?.execution_uuid;
      if (executionId === undefined) await new Promise((resolve) => setImmediate(resolve));
    }
    const at = new Date().toISOString();
    expect((await post(workerKey, `/api/executions/${executionId}/started`, { startedAt: at })).status).toBe(200);
    const foreign = `http://127.0.0.1:${(listener.address() as import('node:net').AddressInfo).port}/output.json`;
    const done = await post(workerKey, `/api/executions/${executionId}/completed`, { completedAt: at, durationMs: 1, nSteps: 1, nAgentActions: 0, nScreenshots: 0, outputUrl: foreign, videoUrl: null, logsUrl: null });
    expect(done.status).toBe(200);
    const answer = await running;
    expect(answer.structuredContent).toMatchObject({ output: null, artifacts: { output: foreign } });
    expect(heard).toEqual([]);
  }, 120_000);
});
