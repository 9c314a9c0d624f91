import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogLines, type LogLine } from './log-lines.js';

export type { LogLine } from './log-lines.js';

/**
 * The worker daemon as a real child process (`node --import tsx src/main.ts`), for fault tests
 * that kill, signal and restart it. Its JSON log lines (pino, stdout) are parsed so tests can
 * await events such as `daemon running` instead of sleeping.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(ROOT, 'src/main.ts');
/** How long `waitForLog` waits by default: a worker starts Chromium and tsx compiles on first use. */
const DEFAULT_WAIT_MS = 60_000;

export type LogMatch = string | RegExp | ((line: LogLine) => boolean);

export interface DaemonProcess {
  readonly name: string;
  readonly pid: number;
  /** Every line written to stdout so far, parsed (a non-JSON line becomes `{ msg: line }`). */
  readonly logs: LogLine[];
  /** stderr so far (config errors, crashes). */
  readonly stderr: () => string;
  /** Resolves with the exit code and signal once the process has ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly alive: boolean;
  /** Resolves with the first log line (already seen or to come) matching; rejects on exit or timeout. */
  waitForLog(match: LogMatch, timeoutMs?: number): Promise<LogLine>;
  /** Log lines matching. */
  find(match: LogMatch): LogLine[];
  /** The last log lines and stderr, to explain a failed expectation. */
  tail(): string;
  /** Sends a signal. SIGKILL also remembers the descendants, so `stop` can end orphans. */
  signal(sig: NodeJS.Signals): void;
  /** Processes started by this daemon now (Chromium, ffmpeg), from /proc. */
  descendants(): number[];
  /** SIGKILL the daemon and everything it started, if still alive; idempotent. */
  stop(): Promise<void>;
}

const started = new Set<DaemonProcess>();

/** Starts the daemon with `env` over the test process's environment; `nodeArgs` go to Node (a profiler's flags). */
export function spawnDaemon(name: string, env: Record<string, string>, nodeArgs: readonly string[] = []): DaemonProcess {
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', MAIN], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const listeners = new Set<() => void>();
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const orphans = new Set<number>();

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
      for (const wake of listeners) wake();
    });
  });
  const killOnExit = () => child.kill('SIGKILL');
  // Safety net if the test process dies without its afterEach.
  process.once('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));

  const stdout = createLogLines(() => {
    for (const wake of listeners) wake();
  });
  const logs = stdout.lines;
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    stdout.write(chunk);
    if (process.env.FAULT_TEST_ECHO) process.stdout.write(chunk.replace(/^/gm, `[${name}] `));
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
  });

  const matches = (match: LogMatch) => (line: LogLine) =>
    typeof match === 'string' ? line.msg === match : match instanceof RegExp ? match.test(line.msg) : match(line);

  const descendants = (): number[] => descendantsOf(child.pid!);

  const proc: DaemonProcess = {
    name,
    pid: child.pid!,
    logs,
    stderr: () => stderr,
    exited,
    get alive() {
      return exitInfo === undefined;
    },
    find: (match) => logs.filter(matches(match)),
    waitForLog(match, timeoutMs = DEFAULT_WAIT_MS) {
      const test = matches(match);
      return new Promise<LogLine>((resolve, reject) => {
        let seen = 0;
        const check = () => {
          for (; seen < logs.length; seen++) {
            if (test(logs[seen]!)) {
              done();
              resolve(logs[seen]!);
              return;
            }
          }
          if (exitInfo) {
            done();
            reject(new Error(`${name} exited (${JSON.stringify(exitInfo)}) before logging ${String(match)}\n${tail()}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${name} did not log ${String(match)} within ${timeoutMs} ms\n${tail()}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    signal(sig) {
      if (sig === 'SIGKILL') for (const pid of descendants()) orphans.add(pid);
      child.kill(sig);
    },
    descendants,
    tail: () => tail(),
    async stop() {
      for (const pid of descendants()) orphans.add(pid);
      if (exitInfo === undefined) child.kill('SIGKILL');
      await exited;
      // Chromium and ffmpeg normally end with their pipes; make sure nothing outlives the test.
      for (const pid of orphans) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      started.delete(proc);
    },
  };
  const tail = () => `--- last log lines of ${name} ---\n${logs.slice(-15).map((l) => JSON.stringify(l)).join('\n')}\n--- stderr ---\n${stderr.slice(-2000)}`;
  started.add(proc);
  return proc;
}

/** Stops every daemon this test file started and has not stopped (afterEach/afterAll). */
export async function stopAllDaemons(): Promise<void> {
  await Promise.allSettled([...started].map((d) => d.stop()));
}

/** Pids of the live descendants of `root`, from /proc (children first found, then theirs). */
export function descendantsOf(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z') continue; // zombie: already dead
      parentOf.set(pid, Number(rest[1]));
    } catch {
      // ended while we looked
    }
  }
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const next: number[] = [];
    for (const [pid, parent] of parentOf) if (frontier.includes(parent)) next.push(pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** The command line of a process ('' when it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}
