import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * `execution-worker serve` that cannot come up (the port is taken, Redis is out of reach) closes
 * every connection it opened: the process, run as bin/ runs it, ends on its own with exit code 2.
 * A connection left open (Redis, the queue, the scheduler's worker) would keep it alive.
 */

const LIMIT_MS = 60_000;

let redis: TestRedis;
let taken: net.Server;
let dir: string;

beforeAll(async () => {
  redis = await startRedis();
  taken = net.createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  dir = await mkdtemp(path.join(os.tmpdir(), 'serve-failure-'));
}, 60_000);

afterAll(async () => {
  taken?.close();
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs `serve` until it ends by itself (or is killed at the limit): its exit code and stderr. */
async function serveUntilExit(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/bin-entry.ts', 'serve'], {
    env: { ...process.env, API_KEYS: 'failure-test-key', ARTIFACTS_DIR: dir, WORK_DIR: dir, LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const limit = setTimeout(() => child.kill('SIGKILL'), LIMIT_MS);
  const [code] = await exited.finally(() => clearTimeout(limit));
  return { code, stderr };
}

describe('execution-worker serve that cannot start', () => {
  it('closes Redis, the queue and the scheduler when the port is taken, and exits 2', async () => {
    const port = (taken.address() as net.AddressInfo).port;
    const { code, stderr } = await serveUntilExit({ PORT: String(port), REDIS_URL: redis.url, EXECUTION_QUEUE: `failure-${port}` });
    expect(stderr).toMatch(/EADDRINUSE/);
    expect(code).toBe(2);
  }, LIMIT_MS + 30_000);

  it('refuses a PUBLIC_HOSTS entry that is not a host, and exits 2', async () => {
    const { code, stderr } = await serveUntilExit({ PORT: '0', REDIS_URL: redis.url, PUBLIC_HOSTS: 'api, http://evil.test/' });
    expect(stderr).toMatch(/PUBLIC_HOSTS="api, http:\/\/evil.test\/": "http:\/\/evil.test\/" is not a host name or a host:port/);
    expect(code).toBe(2);
  }, LIMIT_MS + 30_000);

  it('stops retrying Redis when it is out of reach, and exits 2', async () => {
    // A port nothing listens on: take a free one and let it go.
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const closedPort = (probe.address() as net.AddressInfo).port;
    probe.close();
    await once(probe, 'close');
    const { code, stderr } = await serveUntilExit({ PORT: '0', REDIS_URL: `redis://127.0.0.1:${closedPort}` });
    expect(stderr).toMatch(/cannot reach Redis at redis:\/\/127.0.0.1:\d+\/?: .*ECONNREFUSED/);
    expect(code).toBe(2);
  }, LIMIT_MS + 30_000);
});
