import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/schema.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { hostRules, tempDir } from '../support/env.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { calls, startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * The README's curl quick start, as a reader runs it: its code block, taken from the README
 * itself, run by bash against a real `execution-worker serve` (a child process) and a worker,
 * so the README cannot drift from the API. The model is a scripted one over HTTP; the site is
 * the demo shop.
 */

const BOOTSTRAP = `readme-${randomUUID().slice(0, 8)}`;
let redis: TestRedis;
let shop: ShopServer;
let model: ScriptedModelServer;
let dir: string;
let serve: ChildProcess;
let apiUrl: string;
let worker: Daemon;
let serveLog = '';

/** The fenced block that follows the `quick-start` marker. */
async function quickStartBlock(): Promise<string> {
  const readme = await readFile('README.md', 'utf8');
  const found = /<!-- quick-start[^>]*-->\s*```sh\n([\s\S]*?)\n```/.exec(readme);
  if (!found) throw new Error('the README has no quick-start block');
  return found[1]!;
}

beforeAll(async () => {
  [redis, shop, dir] = await Promise.all([startRedis(), startShopServer(), tempDir('readme')]);
  model = await startScriptedModelServer(() => calls([{ name: 'finish', input: { status: 'completed', output: { title: 'Acme shop' } } }]));
  const queueName = `readme-${randomUUID().slice(0, 8)}`;
  const artifactsDir = path.join(dir, 'artifacts');
  serve = spawn(process.execPath, ['--import', 'tsx', 'test/support/cli-entry.ts', 'serve'], {
    env: { ...process.env, PORT: '0', API_KEYS: BOOTSTRAP, REDIS_URL: redis.url, EXECUTION_QUEUE: queueName, ARTIFACTS_DIR: artifactsDir, LOG_LEVEL: 'info', ANTHROPIC_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  apiUrl = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      serveLog += chunk.toString();
      const url = /"url":"(http:\/\/[^"]+)"[^\n]*local API and dashboard listening/.exec(serveLog)?.[1];
      // Without a key in its environment, serve says so at start, after it listens.
      if (url && /no Anthropic API key/.test(serveLog)) resolve(url);
    };
    serve.stdout!.on('data', onData);
    serve.stderr!.on('data', onData);
    serve.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening:\n${serveLog}`)));
  });
  const config = loadConfig({
    REDIS_URL: redis.url,
    EXECUTION_QUEUE: queueName,
    API_BASE_URL: apiUrl,
    API_KEY: BOOTSTRAP,
    ARTIFACTS_DIR: artifactsDir,
    ARTIFACT_BASE_URL: `${apiUrl}/artifacts/`,
    BROWSER_HOST_RULES: hostRules('shop.test'),
    WORK_DIR: path.join(dir, 'work'),
    VIDEO_FPS: '5',
    ANTHROPIC_API_KEY: 'sk-scripted',
    ANTHROPIC_BASE_URL: model.url,
  });
  worker = await startDaemon(config, createSilentLogger());
}, 180_000);

afterAll(async () => {
  await worker?.shutdown('test over');
  if (serve && serve.exitCode === null && serve.signalCode === null) {
    const exited = once(serve, 'exit');
    serve.kill('SIGTERM');
    await exited;
  }
  await Promise.allSettled([shop?.close(), model?.stop(), redis?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the README quick start', () => {
  it('makes a key, creates a workflow, executes it, polls it and fetches its video, with curl', async () => {
    const block = await quickStartBlock();
    const site = new URL(shop.origin);
    const env = { ...process.env, API: apiUrl, BOOTSTRAP, SITE_HOST: site.host, SITE_URL: `${shop.origin}/` };
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    const shown = JSON.parse(stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ status: 'completed', error: null, video_url: expect.stringContaining('/video.mp4') });
    const video = await stat(path.join(dir, 'video.mp4'));
    expect(video.size).toBeGreaterThan(1000);
    // An MP4 begins with its ftyp box.
    expect((await readFile(path.join(dir, 'video.mp4'))).subarray(4, 8).toString()).toBe('ftyp');
    // serve said once, at start, that it has no model key; nothing more of it since.
    expect(serveLog.match(/no Anthropic API key/g)).toHaveLength(1);
  }, 240_000);
});
