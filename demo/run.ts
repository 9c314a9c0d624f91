/**
 * The one-command demo (`npm run demo`): Redis (a private one unless REDIS_URL is set), the
 * local API and dashboard, the demo shop on http://shop.test (mapped to loopback), and one
 * worker; then it creates a workflow through the API, executes it, shows progress, and prints
 * the finished execution with a signed-in dashboard link to its steps and video.
 *
 * With ANTHROPIC_API_KEY set, Claude does the work live. Without it, the bundled recording
 * demo/shop.recording.json is replayed (it was recorded against this app with a scripted
 * model, see demo/record.ts). Set DEMO_EXIT=1 to stop once the execution ends.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config/schema.js';
import { startLocalServer } from '../src/local-service/server.js';
import { startDaemon } from '../src/daemon.js';
import { loadRecording } from '../src/model/playback-client.js';
import { createLogger } from '../src/telemetry/logger.js';
import { startRedis } from './local-redis.js';
import { startShopServer } from './shop-server.js';
import { DEMO_INPUT, DEMO_WORKFLOW } from './workflow.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const live = Boolean(process.env.ANTHROPIC_API_KEY);
  const redis = await startRedis();
  const shop = await startShopServer();
  const artifactsDir = path.resolve(process.env.ARTIFACTS_DIR ?? path.join(ROOT, '.demo', 'artifacts'));
  await mkdir(artifactsDir, { recursive: true });
  const apiKey = process.env.API_KEY ?? `demo-${randomBytes(9).toString('hex')}`;
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn', destination: process.stderr });
  const port = await freePort(Number(process.env.PORT ?? 8080));
  const api = await startLocalServer({ port, apiKeys: [apiKey], redisUrl: redis.url, queueName: 'demo-executions', queuePrefix: 'bull', artifactsDir, logger });

  const config = loadConfig({
    ...process.env,
    REDIS_URL: redis.url,
    EXECUTION_QUEUE: 'demo-executions',
    API_BASE_URL: api.url,
    API_KEY: apiKey,
    ARTIFACTS_DIR: artifactsDir,
    S3_BUCKET: '',
    ARTIFACT_BASE_URL: `${api.url}/artifacts/`,
    BROWSER_HOST_RULES: `MAP shop.test 127.0.0.1`,
    WORKER_CONCURRENCY: '1',
  });
  const replay = live ? undefined : await loadRecording(path.join(HERE, 'shop.recording.json'));
  const worker = await startDaemon(config, logger, replay ? { replay } : {});

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await worker.shutdown('demo over');
    await Promise.allSettled([api.close(), shop.close(), redis.stop()]);
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(143)));

  say(`Local API and dashboard: ${api.url}/   (API key: ${apiKey})`);
  say(`Demo shop: ${shop.origin}/ (shop.test → 127.0.0.1 inside the sandboxed browser)`);
  say(live ? `Model: Claude (${config.ANTHROPIC_MODEL}), live` : 'Model: none — replaying demo/shop.recording.json (set ANTHROPIC_API_KEY to run Claude live)');

  const call = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${api.url}${route}`, {
      method,
      headers: { 'x-service-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${method} ${route} → ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };

  const workflow = await call('POST', '/api/workflows', DEMO_WORKFLOW(`${shop.origin}/`));
  const workflowId = String(workflow.workflow_uuid);
  say(`Created workflow ${workflowId} (version 1 published)`);
  const execution = await call('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: DEMO_INPUT });
  const executionId = String(execution.execution_uuid);
  // A link that opens the execution already signed in (the page gets a session cookie; the link
  // stops working after 15 minutes, the session after 12 hours). Nothing else opens without a key.
  const loginLink = async () => String((await call('POST', '/api/login-links', { route: `#/executions/${executionId}` })).url);
  say(`Executing ${executionId} …`);
  say(`Watch it live: ${await loginLink()}`);

  let last = '';
  let final: Record<string, unknown> | undefined;
  const deadline = Date.now() + config.EXECUTION_TIMEOUT_MS + 120_000;
  while (Date.now() < deadline) {
    const current = await call('GET', `/api/executions/${executionId}`);
    const line = `  status ${current.status}`;
    if (line !== last) say(line);
    last = line;
    if (current.status === 'completed' || current.status === 'failed') {
      final = current;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (!final) throw new Error('the execution did not end in time');
  say('');
  say(JSON.stringify(final, null, 2));
  say('');
  say(`Dashboard (steps, video and log), signed in: ${await loginLink()}`);
  say(`Video: ${String(final.video_url)}`);
  if (process.env.DEMO_EXIT === '1') {
    await stop();
    process.exitCode = final.status === 'completed' ? 0 : 1;
    return;
  }
  say('Press Ctrl-C to stop.');
}

/** The preferred port when it is free, else any free port. */
async function freePort(preferred: number): Promise<number> {
  const tryListen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
  return tryListen(preferred).catch(() => tryListen(0));
}

main().catch((error: unknown) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
