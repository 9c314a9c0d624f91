import { execFile, spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { promisify } from 'node:util';
import { createLogLines, type LogLine } from '../../test/support/log-lines.js';
import { commandLine, descendants } from '../../test/support/processes.js';

/**
 * Runs an image without a daemon: `buildah run` with the OCI runtime (runc), so each process
 * gets what Docker would give it: its own mount, PID, IPC and UTS namespaces, pivot_root into
 * the image, the image's user, environment and working directory, no capabilities, a seccomp
 * profile and a /dev/shm of its own. The network is the host's, so the container reaches
 * services the smoke test starts on loopback.
 *
 * Not `--isolation chroot` (what the build uses): the kernel refuses to create a user namespace
 * inside a chroot (unshare(CLONE_NEWUSER) returns EPERM when the caller's root is not its mount
 * namespace's root), so Chromium's sandbox cannot start there. runc uses pivot_root instead.
 */

const exec = promisify(execFile);

export interface ImageConfig {
  user: string;
  entrypoint: string[];
  cmd: string[];
  workingDir: string;
  stopSignal: string | undefined;
  /** The HEALTHCHECK command (`CMD` form, without the `CMD` word), when the image has one. */
  healthcheck: string[] | undefined;
}

export async function inspectImage(image: string): Promise<ImageConfig> {
  const { stdout } = await exec('buildah', ['inspect', '--type', 'image', image], { maxBuffer: 64 * 2 ** 20 });
  const info = JSON.parse(stdout) as {
    OCIv1: { config?: { User?: string; Entrypoint?: string[]; Cmd?: string[]; WorkingDir?: string; StopSignal?: string } };
    Docker: { config?: { Healthcheck?: { Test?: string[] } } };
  };
  const config = info.OCIv1.config ?? {};
  const test = info.Docker.config?.Healthcheck?.Test;
  return {
    user: config.User ?? '',
    entrypoint: config.Entrypoint ?? [],
    cmd: config.Cmd ?? [],
    workingDir: config.WorkingDir ?? '/',
    stopSignal: config.StopSignal,
    healthcheck: test && test[0] === 'CMD' ? test.slice(1) : undefined,
  };
}

export interface RunOptions {
  env?: Record<string, string>;
  /** `host-path:container-path[:options]` */
  volumes?: string[];
}

export interface ContainerProcess {
  /** The `buildah run` process on the host. */
  readonly hostPid: number;
  /** stdout as pino lines (a line that is not JSON becomes `{ msg: line }`). */
  readonly lines: LogLine[];
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit status `buildah run` passes on from the container's PID 1. */
  readonly exited: Promise<number | null>;
  /** Resolves with the first stdout line matching (already seen or to come); rejects on exit or after `timeoutMs`. */
  waitForLine(match: (line: LogLine) => boolean, what: string, timeoutMs: number): Promise<LogLine>;
  /** The container's PID 1 as the host sees it, once it runs. */
  pid1(): number | undefined;
  /** The container's processes as the host sees them. */
  processes(): Array<{ pid: number; comm: string; cmdline: string }>;
  /** SIGKILL to PID 1 ends every process of the container; idempotent. */
  kill(): Promise<void>;
}

export interface Container {
  readonly id: string;
  /** Starts `argv` in a new OCI container made from this working container. */
  start(argv: string[], options?: RunOptions): ContainerProcess;
  /** Runs `argv` to its end. */
  run(argv: string[], options?: RunOptions): Promise<{ code: number | null; stdout: string; stderr: string }>;
  remove(): Promise<void>;
}

export interface ContainerOptions {
  /** A seccomp profile (JSON file), as `docker run --security-opt seccomp=FILE`. */
  seccompProfile: string;
  /** /dev/shm size, as `docker run --shm-size`. */
  shmSize: string;
}

/** A working container of `image`; every `start` runs in a fresh runtime container from it. */
export async function createContainer(image: string, options: ContainerOptions): Promise<Container> {
  const { stdout } = await exec('buildah', [
    'from', '--pull=never', '--quiet',
    '--security-opt', `seccomp=${options.seccompProfile}`,
    // As Kubernetes' `capabilities: drop: [ALL]`: Chromium's sandbox must work without any.
    '--cap-drop=all',
    '--shm-size', options.shmSize,
    image,
  ]);
  const id = stdout.trim();
  const started = new Set<ContainerProcess>();
  let removing: Promise<void> | undefined;

  const start = (argv: string[], runOptions: RunOptions = {}): ContainerProcess => {
    const args = ['run', '--isolation', 'oci', '--network', 'host'];
    for (const [key, value] of Object.entries(runOptions.env ?? {})) args.push('--env', `${key}=${value}`);
    for (const volume of runOptions.volumes ?? []) args.push('--volume', volume);
    const child = spawn('buildah', [...args, id, '--', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    const running = watch(child);
    started.add(running);
    void running.exited.then(() => started.delete(running));
    return running;
  };

  return {
    id,
    start,
    async run(argv, runOptions) {
      const running = start(argv, runOptions);
      const code = await running.exited;
      return { code, stdout: running.stdout(), stderr: running.stderr() };
    },
    remove() {
      removing ??= (async () => {
        await Promise.allSettled([...started].map((p) => p.kill()));
        await exec('buildah', ['rm', id]).catch(() => undefined);
      })();
      return removing;
    },
  };
}

function watch(child: ReturnType<typeof spawn>): ContainerProcess {
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  const log = createLogLines(() => waiters.forEach((wake) => wake()));
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    log.write(chunk);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let ended = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      ended = true;
      waiters.forEach((wake) => wake());
      resolve(code);
    });
    child.once('error', () => resolve(null));
  });

  const processes = () =>
    descendants(child.pid!).map((p) => ({ pid: p.pid, comm: p.comm, cmdline: commandLine(p.pid) }));
  // PID 1 of the container: below `buildah run`, PID 1 of the PID namespace one level below the
  // host's. Chromium's sandboxed zygote is PID 1 too, of a namespace one level deeper.
  const pid1 = () => {
    const depth = namespacePids(child.pid!).length + 1;
    return processes().find((p) => {
      const pids = namespacePids(p.pid);
      return pids.length === depth && pids.at(-1) === 1;
    })?.pid;
  };

  return {
    hostPid: child.pid!,
    lines: log.lines,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    pid1,
    processes,
    waitForLine(match, what, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = log.lines.find(match);
          if (found) return finish(() => resolve(found));
          if (ended) return finish(() => reject(new Error(`the container exited before ${what}\n${tail(stdout, stderr)}`)));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`no ${what} within ${timeoutMs} ms\n${tail(stdout, stderr)}`))), timeoutMs);
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      });
    },
    async kill() {
      if (ended) return;
      const pid = pid1();
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
      else child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The PIDs of a process from the host's namespace inward (`NSpid:` of /proc/PID/status). */
export function namespacePids(pid: number): number[] {
  const line = /^NSpid:\s+(.*)$/m.exec(statusOf(pid))?.[1] ?? '';
  return line.split(/\s+/).filter(Boolean).map(Number);
}

/** A field of /proc/PID/status ('' once the process is gone). */
export function statusField(pid: number, field: string): string {
  return new RegExp(`^${field}:\\s+(.*)$`, 'm').exec(statusOf(pid))?.[1]?.trim() ?? '';
}

/** The namespace a process is in (`user:[4026531837]`), '' once it is gone. */
export function namespaceOf(pid: number, kind: 'user' | 'pid' | 'net' | 'mnt'): string {
  try {
    return readlinkSync(`/proc/${pid}/ns/${kind}`);
  } catch {
    return '';
  }
}

function statusOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return '';
  }
}

function tail(stdout: string, stderr: string): string {
  const last = (text: string) => text.trim().split('\n').slice(-15).join('\n');
  return `--- stdout (last lines)\n${last(stdout)}\n--- stderr (last lines)\n${last(stderr)}`;
}

/** The exit status of `running`; rejects after `timeoutMs` (the caller then kills the container). */
export async function waitForExit(running: ContainerProcess, what: string, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not exit within ${timeoutMs} ms\n${tail(running.stdout(), running.stderr())}`)), timeoutMs);
  });
  try {
    return await Promise.race([running.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}
