import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Fails the suite when a test leaves a process behind. Every process the tests start inherits
 * a marker in its environment; after the run, any process still carrying it is a leak: it is
 * listed, killed, and the run fails.
 */
const MARKER = 'EXECUTION_WORKER_TEST_RUN';

export default function setup(): () => Promise<void> {
  // One token for the whole run, even if each project of the config calls this setup.
  const token = (process.env[MARKER] ??= randomUUID());
  return async () => {
    let leaked = findMarked(token);
    // Give processes that are already exiting a moment, polling rather than sleeping blind.
    for (let i = 0; i < 50 && leaked.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      leaked = findMarked(token);
    }
    if (leaked.length === 0) return;
    for (const p of leaked) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // Vitest reports a teardown error but still exits 0: make the run fail.
    process.exitCode = 1;
    throw new Error(`tests left ${leaked.length} process(es) running:\n${leaked.map((p) => `  ${p.pid} ${p.cmd}`).join('\n')}`);
  };
}

function findMarked(token: string): Array<{ pid: number; cmd: string }> {
  const needle = `${MARKER}=${token}`;
  const found: Array<{ pid: number; cmd: string }> = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
      if (!environ.split('\0').includes(needle)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue; // zombie: already dead
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').trim().slice(0, 160);
      // Vitest's own worker processes end with the run; only what the tests started counts.
      if (/vitest|tinypool/.test(cmd)) continue;
      found.push({ pid, cmd });
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}
