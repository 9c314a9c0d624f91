import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { once } from 'node:events';

/**
 * A real Redis for the tests and the demo: `REDIS_URL` when the environment provides one (then
 * `stop` leaves it alone), else a private `redis-server` on a free port, in memory only.
 */

export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (no-op for an external one); idempotent. */
  stop(): Promise<void>;
  /** Stops and starts the server again on the same port (fault tests); absent for an external one. */
  restart?(): Promise<void>;
}

const READY_LINE = /Ready to accept connections/;
const START_DEADLINE_MS = 15_000;
const STOP_GRACE_MS = 5_000;

/**
 * `appendOnlyDir`: keep an append-only file there, so a restart keeps the data (fleet fault tests).
 * `ownProcessGroup`: the server runs in a process group of its own, so that a terminal's Ctrl-C
 * (SIGINT to the whole foreground group) does not stop it before its user has closed what uses
 * it (the demo stops it last); it is still stopped when this process exits.
 */
export async function startRedis(options: { appendOnlyDir?: string; ownProcessGroup?: boolean } = {}): Promise<TestRedis> {
  const external = process.env.REDIS_URL;
  if (external) {
    const port = Number(new URL(external).port || 6379);
    return { url: external, port, stop: async () => undefined };
  }

  let lastError: unknown;
  // A free port can be taken between our probe and redis binding it: try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      let child = await spawnRedis(port, options);
      let stopping: Promise<void> | undefined;
      const stop = (): Promise<void> => {
        stopping ??= terminate(child);
        return stopping;
      };
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        stop,
        async restart() {
          await stop();
          child = await spawnRedis(port, options);
          stopping = undefined;
        },
      };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

function spawnRedis(port: number, { appendOnlyDir, ownProcessGroup = false }: { appendOnlyDir?: string; ownProcessGroup?: boolean }): Promise<ChildProcess> {
  return spawnRedisProcess(
    [
      '--port', String(port),
      '--bind', '127.0.0.1',
      // In memory only (no RDB snapshots, no append-only file, nothing left on disk), unless asked.
      '--save', '',
      ...(appendOnlyDir ? ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', appendOnlyDir] : ['--appendonly', 'no']),
      // Our own stdout, so we can wait for the ready line.
      '--logfile', '',
    ],
    READY_LINE,
    { detached: ownProcessGroup },
  );
}

/** Spawns `redis-server ARGS` and resolves once its log shows `ready` (a primary, a replica or a sentinel). */
export function spawnRedisProcess(args: string[], ready: RegExp, options: { detached?: boolean } = {}): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached ?? false });
  const killOnExit = () => child.kill('SIGKILL');
  // Safety net if the test process dies without running its afterAll.
  process.once('exit', killOnExit);
  child.once('exit', () => process.removeListener('exit', killOnExit));

  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`redis-server did not start within ${START_DEADLINE_MS} ms:\n${output}`)), START_DEADLINE_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        cleanup();
        resolve(child);
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      fail(new Error(`redis-server exited before it was ready (code ${code}, signal ${signal}):\n${output}`), false);
    };
    const onError = (error: Error) => fail(error, false);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      // Keep draining, so a chatty server never blocks on a full pipe.
      child.stdout?.resume();
      child.stderr?.resume();
    };
    const fail = (error: Error, kill = true) => {
      cleanup();
      if (kill) void terminate(child);
      reject(error);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
export async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A port free on 127.0.0.1 now (another process may take it before it is used). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
