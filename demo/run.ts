/**
 * The one-command demo (`npm run demo`): Redis (a private one unless REDIS_URL is set), the
 * local API and dashboard, the demo shop on http://shop.test (mapped to loopback), and one
 * worker; then it creates a workflow through the API, executes it, shows progress, and prints
 * the finished execution with a signed-in dashboard link to its steps and video.
 *
 * With ANTHROPIC_API_KEY set, Claude does the work live. Without it, the bundled recording
 * demo/shop.recording.json is played back (it was recorded against this app with a scripted
 * model, see demo/record.ts): the run's output.json and the closing lines say so, and a
 * workflow other than the demo's fails at once, saying it needs ANTHROPIC_API_KEY, instead of
 * playing the shop order back under another name. Set DEMO_EXIT=1 to stop once the execution ends.
 *
 * Ctrl-C stops everything in order (the worker, the API, the shop, then Redis) and exits 130,
 * however many SIGINTs it brings (a terminal signals the whole process group, npm passes one
 * on): the private Redis runs in a process group of its own, so it is stopped last, by us.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { int } from '../src/config/env.js';
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

const RECORDING = 'shop.recording.json';
const NO_KEY_REASON = 'ANTHROPIC_API_KEY is not set: the demo replays its bundled recording instead of calling Claude';
/** How long a stop waits for a running execution before it is aborted (reported failed, worker_shutdown). */
const DEMO_SHUTDOWN_GRACE_MS = '3000';

/** Set once a stop began: what main() still awaits is of no interest, and its faults are not errors. */
const stopping = new AbortController();

/** Everything the demo started, stopped in order once, whoever asks (a signal, DEMO_EXIT, a failure). */
const cleanups: Array<{ name: string; close: () => Promise<unknown> }> = [];
let stopped: Promise<void> | undefined;
function stop(): Promise<void> {
  stopped ??= (async () => {
    stopping.abort();
    // In reverse of starting: the worker (it reports to the API), the API, the shop, then Redis;
    // one started while this runs (a stop during start) is taken too.
    for (let last = cleanups.pop(); last; last = cleanups.pop()) {
      const { name, close } = last;
      await close().catch((error: unknown) => process.stderr.write(`could not stop the ${name}: ${error instanceof Error ? error.message : String(error)}\n`));
    }
  })();
  return stopped;
}
// `on`, not `once`: one Ctrl-C can bring several SIGINTs (the terminal's to the group, npm's own);
// each after the first joins the stop under way rather than killing the process half-way.
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => {
    if (!stopping.signal.aborted) say('\nStopping …');
    void stop().then(() => process.exit(code));
  });
}

async function main(): Promise<void> {
  const live = Boolean(process.env.ANTHROPIC_API_KEY);
  const portWanted = int(0, 65_535).safeParse(process.env.PORT?.trim() || '8080');
  if (!portWanted.success) {
    process.stderr.write(`PORT=${JSON.stringify(process.env.PORT)}: must be a whole number from 0 to 65535\n`);
    process.exitCode = 2;
    return;
  }
  const redis = await startRedis({ ownProcessGroup: true });
  cleanups.push({ name: 'Redis', close: () => redis.stop() });
  const shop = await startShopServer();
  cleanups.push({ name: 'shop', close: () => shop.close() });
  const artifactsDir = path.resolve(process.env.ARTIFACTS_DIR ?? path.join(ROOT, '.demo', 'artifacts'));
  await mkdir(artifactsDir, { recursive: true });
  const apiKey = process.env.API_KEY ?? `demo-${randomBytes(9).toString('hex')}`;
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn', destination: process.stderr });
  const port = await freePort(portWanted.data);
  const api = await startLocalServer({ port, apiKeys: [apiKey], redisUrl: redis.url, queueName: 'demo-executions', queuePrefix: 'bull', artifactsDir, logger });
  cleanups.push({ name: 'local API', close: () => api.close() });

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
    SHUTDOWN_GRACE_MS: process.env.SHUTDOWN_GRACE_MS ?? DEMO_SHUTDOWN_GRACE_MS,
  });
  const recording = live ? undefined : await loadRecording(path.join(HERE, RECORDING));
  // The recording is of the demo's workflow: the worker plays that one back only (docs/counters-and-artifacts.md#playback).
  const playback = { recording: RECORDING, reason: NO_KEY_REASON, onlyPrompt: DEMO_WORKFLOW(`${shop.origin}/`).prompt };
  const worker = await startDaemon(config, logger, recording ? { recording, playback } : {});
  cleanups.push({ name: 'worker', close: () => worker.shutdown('demo over') });
  if (stopping.signal.aborted) return;

  say(`Local API and dashboard: ${api.url}/   (API key: ${apiKey})`);
  say(`Demo shop: ${shop.origin}/ (shop.test → 127.0.0.1 inside the sandboxed browser)`);
  say(live ? `Model: Claude (${config.ANTHROPIC_MODEL}), live` : `Model: none — replaying demo/${RECORDING} (set ANTHROPIC_API_KEY to run Claude live; without it, only the demo's own workflow runs)`);

  const call = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${api.url}${route}`, {
      method,
      signal: stopping.signal,
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
    await delay(500, undefined, { signal: stopping.signal });
  }
  if (!final) throw new Error('the execution did not end in time');
  say('');
  say(JSON.stringify(final, null, 2));
  say('');
  if (recording) say(`This run replayed demo/${RECORDING} instead of calling a model: ${NO_KEY_REASON}. Set ANTHROPIC_API_KEY to run Claude live (any other workflow needs it).`);
  const folder = path.join(artifactsDir, 'executions', executionId);
  if (process.env.DEMO_EXIT === '1') {
    // The server stops now: no link to it, the files instead.
    await stop();
    say(`Stopped (DEMO_EXIT=1). The execution's video, log and output are in ${folder}`);
    process.exitCode = final.status === 'completed' ? 0 : 1;
    return;
  }
  say(`Dashboard (steps, video and log), signed in: ${await loginLink()}`);
  say(`Video: ${String(final.video_url)}`);
  say(`Files: ${folder}`);
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

main().catch(async (error: unknown) => {
  // A stop under way ends what main() awaited: that is the stop, not a failure.
  if (stopping.signal.aborted) return;
  process.stderr.write(`demo failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  await stop();
  process.exit(1);
});
