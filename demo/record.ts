/**
 * Makes demo/shop.recording.json: runs the demo workflow on the demo shop with a scripted
 * model instead of Claude (the browser toolset, turns from demoToolsetTurn: each reads its
 * references from what the worker showed), and keeps the run's recording.json. Run it again
 * after changing the shop or the script: `node --import tsx demo/record.ts`.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBrowser, createRunnerDeps } from '../src/compose.js';
import { loadConfig } from '../src/config/schema.js';
import { runExecution } from '../src/runner/run-execution.js';
import { createLocalStore } from '../src/storage/local-store.js';
import { createLogger } from '../src/telemetry/logger.js';
import { startShopServer } from './shop-server.js';
import { DEMO_INPUT, DEMO_WORKFLOW, demoToolsetTurn, lastObservation, turnOf } from './workflow.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** A minimal Messages API that answers turn n with demoToolsetTurn(n, what the worker showed last). */
async function startScriptedModel(): Promise<{ url: string; close(): Promise<void> }> {
  let turn = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let calls;
      try {
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        turn++;
        calls = demoToolsetTurn(turnOf(body), lastObservation(body));
      } catch (error) {
        const message = JSON.stringify((error as Error).message);
        return void res.writeHead(400, { 'content-type': 'application/json', 'x-should-retry': 'false' }).end(`{"type":"error","error":{"type":"invalid_request_error","message":${message}}}`);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `msg_demo_${turn}`,
          type: 'message',
          role: 'assistant',
          model: 'scripted',
          content: calls.map((call, i) => ({ type: 'tool_use', id: `toolu_demo_${turn}_${i + 1}`, name: call.name, input: call.input, ...(call.toolset_name ? { toolset_name: call.toolset_name } : {}) })),
          stop_reason: 'tool_use',
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'demo-record-'));
const [shop, model] = await Promise.all([startShopServer(), startScriptedModel()]);
const logger = createLogger({ level: 'warn', destination: process.stderr });
const config = loadConfig({ ...process.env, ANTHROPIC_API_KEY: 'not-a-real-key-scripted-model', ANTHROPIC_BASE_URL: model.url, BROWSER_HOST_RULES: 'MAP shop.test 127.0.0.1', WORK_DIR: dir, VIDEO_ENABLED: 'false' });
const browser = createBrowser(config, logger);
try {
  const deps = createRunnerDeps({ config, logger, browser, store: createLocalStore({ dir, prefix: '' }) });
  const summary = await runExecution(deps, { executionId: 'demo-recording', inputPayload: DEMO_INPUT, specification: DEMO_WORKFLOW(`${shop.origin}/`) }, new AbortController().signal);
  if (summary.status !== 'completed') throw new Error(`the scripted run did not complete: ${JSON.stringify(summary)}`);
  await copyFile(path.join(dir, 'executions', 'demo-recording', 'recording.json'), path.join(HERE, 'shop.recording.json'));
  process.stdout.write(`wrote demo/shop.recording.json (${summary.document.counters.nSteps} turns)\n`);
} finally {
  await browser.close();
  await Promise.all([shop.close(), model.close()]);
  await rm(dir, { recursive: true, force: true });
}
