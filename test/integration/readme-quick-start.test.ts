import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostRules, tempDir } from '../support/env.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { calls, startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * The README's curl quick start, as a reader runs it: its code block, taken from the README
 * itself, run by bash against `execution-worker serve` and a worker (`npm start`), each started
 * by the README's own command line, so the README cannot drift from the API. The model is a scripted one over HTTP; the site is
 * the demo shop.
 */

/** The README's own bootstrap key: its serve line sets it. */
const BOOTSTRAP = 'bootstrap-key';
let redis: TestRedis;
let shop: ShopServer;
let model: ScriptedModelServer;
let dir: string;
let serve: ChildProcess;
let apiUrl: string;
let workerProcess: ChildProcess | undefined;
let serveLog = '';

/** The fenced block that follows the `quick-start` marker. */
async function quickStartBlock(): Promise<string> {
  const readme = await readFile('README.md', 'utf8');
  const found = /<!-- quick-start[^>]*-->\s*```sh\n([\s\S]*?)\n```/.exec(readme);
  if (!found) throw new Error('the README has no quick-start block');
  return found[1]!;
}

/** The commands of the block that starts the service and a worker (the first after the quick start's heading). */
async function startBlock(): Promise<string[]> {
  const readme = await readFile('README.md', 'utf8');
  const found = /## Quick start with curl[\s\S]*?```sh\n([\s\S]*?)\n```/.exec(readme);
  if (!found) throw new Error('the README has no block that starts the service');
  return found[1]!.split('\n').filter((line) => line.trim() && !line.trim().startsWith('#'));
}

/**
 * Runs one command of the start block as bash runs it, from this checkout: `npx execution-worker`
 * and `npm start` run the source, as bin/ and dist/ run it built; the README's own variables and
 * address stay as written but for what the test must point elsewhere. Resolves once `ready` is logged.
 */
async function startFromReadme(command: string, env: NodeJS.ProcessEnv, ready: RegExp, onLog: (text: string) => void): Promise<{ child: ChildProcess; found: RegExpExecArray }> {
  const source = command
    .replace('npx execution-worker', `${process.execPath} --import tsx test/support/cli-entry.ts`)
    .replace('npm start', `${process.execPath} --import tsx src/main.ts`);
  // One simple command: bash runs it in its own place, so the test's signal reaches the program.
  const child = spawn('bash', ['-c', source], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const found = await new Promise<RegExpExecArray>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      onLog(log);
      const match = ready.exec(log);
      if (match) resolve(match);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before it was ready:\n${log}`)));
  });
  return { child, found };
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

beforeAll(async () => {
  [redis, shop, dir] = await Promise.all([startRedis(), startShopServer(), tempDir('readme')]);
  model = await startScriptedModelServer(() => calls([{ name: 'finish', input: { status: 'completed', output: { title: 'Acme shop' } } }]));
  const queueName = `readme-${randomUUID().slice(0, 8)}`;
  const commands = await startBlock();
  const serveLine = commands.find((line) => line.includes('execution-worker serve'));
  const workerLine = commands.find((line) => line.includes('npm start'));
  expect(commands, 'the start block: serve, then a worker').toEqual([serveLine, workerLine]);
  // What the README leaves to its defaults (port 8080, the local Redis, ./artifacts) points at this test's own.
  const shared = { ...process.env, REDIS_URL: redis.url, EXECUTION_QUEUE: queueName, ARTIFACTS_DIR: path.join(dir, 'artifacts'), LOG_LEVEL: 'info', ANTHROPIC_API_KEY: '' };
  const started = await startFromReadme(serveLine!, { ...shared, PORT: '0' }, /"url":"(http:\/\/[^"]+)"[^\n]*local API and dashboard listening[\s\S]*no Anthropic API key/, (log) => (serveLog = log));
  serve = started.child;
  apiUrl = started.found[1]!;
  const worker = workerLine!
    .replace('http://127.0.0.1:8080', apiUrl)
    .replace(/ANTHROPIC_API_KEY=\S+/, 'ANTHROPIC_API_KEY=sk-scripted');
  expect(worker, 'the worker line as the README gives it').not.toBe(workerLine);
  workerProcess = (await startFromReadme(worker, {
    ...shared,
    BROWSER_HOST_RULES: hostRules('shop.test'),
    WORK_DIR: path.join(dir, 'work'),
    VIDEO_FPS: '5',
    ANTHROPIC_BASE_URL: model.url,
  }, /daemon running/, () => undefined)).child;
}, 180_000);

afterAll(async () => {
  await stopChild(workerProcess);
  await stopChild(serve);
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
