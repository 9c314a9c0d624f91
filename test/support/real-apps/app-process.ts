import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { pause } from '../poll.js';

/**
 * A real application's server as a child process of the test, in a process group of its own so
 * that stopping it ends everything it started. Its stdout is kept as lines (the harnesses print
 * the port they listen on and one line per request there); stderr is kept for error messages.
 */
export interface AppProcess {
  readonly pid: number;
  /** Every stdout line so far. */
  readonly lines: string[];
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The first stdout line (seen or to come) that `match` turns into a value; rejects on exit or after `timeoutMs`. */
  waitForLine<T>(what: string, match: (line: string) => T | undefined, timeoutMs: number): Promise<T>;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the process has exited. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export function spawnApp(name: string, command: string, args: readonly string[], options: { cwd: string; env: Record<string, string> }): AppProcess {
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const wakers = new Set<() => void>();
  const wake = () => {
    for (const w of [...wakers]) w();
  };
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    wake();
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    // Enough to say why it failed; a chatty server must not grow this without end.
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (error) => {
      stderr += `\n${name} could not be started: ${error.message}`;
      exitInfo = { code: null, signal: null };
      resolve(exitInfo);
      wake();
    });
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
      wake();
    });
  });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone
    }
  };
  // A test process that dies without its afterAll must not leave the server behind.
  const onExit = () => killGroup('SIGKILL');
  process.once('exit', onExit);
  void exited.then(() => process.removeListener('exit', onExit));

  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    lines,
    stderr: () => stderr,
    exited,
    waitForLine(what, match, timeoutMs) {
      return new Promise((resolve, reject) => {
        let seen = 0;
        const timer = setTimeout(() => finish(() => reject(new Error(`${name} did not ${what} within ${timeoutMs} ms\n${tail()}`))), timeoutMs);
        const finish = (then: () => void) => {
          clearTimeout(timer);
          wakers.delete(check);
          then();
        };
        const check = () => {
          for (; seen < lines.length; seen++) {
            const value = match(lines[seen]!);
            if (value !== undefined) return finish(() => resolve(value));
          }
          if (exitInfo) finish(() => reject(new Error(`${name} exited (${JSON.stringify(exitInfo)}) before it could ${what}\n${tail()}`)));
        };
        wakers.add(check);
        check();
      });
    },
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
        if (exitInfo) return;
        killGroup('SIGTERM');
        const ended = await Promise.race([exited.then(() => true), pause(graceMs).then(() => false)]);
        if (!ended) {
          killGroup('SIGKILL');
          await exited;
        }
        // Whatever the leader left in its group (none of these servers forks, but be sure).
        killGroup('SIGKILL');
      })();
      return stopping;
    },
  };

  function tail(): string {
    return `--- last stdout lines ---\n${lines.slice(-10).join('\n')}\n--- stderr ---\n${stderr.slice(-3000)}`;
  }
}

/** Stops the application (when it was started) and removes its folder: each app's `stop()`, and the clean-up of a start that failed. */
export async function stopApp(app: AppProcess | undefined, dir: string): Promise<void> {
  await app?.stop();
  await rm(dir, { recursive: true, force: true });
}

/**
 * Polls `url` until it answers 200, each attempt bounded; throws after `timeoutMs`, or as soon as
 * `app` has exited (a server that failed to start).
 */
export async function awaitHttp(url: string, timeoutMs: number, app?: AppProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  let gone = false;
  void app?.exited.then(() => (gone = true));
  while (Date.now() < deadline) {
    if (gone) throw new Error(`the server exited before ${url} answered (last: ${last})`);
    try {
      const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(Math.min(10_000, Math.max(1, deadline - Date.now()))) });
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await pause(200);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last})`);
}
