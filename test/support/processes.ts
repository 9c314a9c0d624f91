import { readdirSync, readFileSync } from 'node:fs';

/** Processes of this machine as /proc shows them, for leak checks and resource figures. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** Kernel name of the executable (`chromium`, `ffmpeg`). */
  comm: string;
  /** Single-letter state; `Z` is exited and waiting to be reaped. */
  state: string;
  /** CPU seconds, this process and its reaped children. */
  cpuSeconds: number;
  /** CPU seconds of this process alone. */
  ownCpuSeconds: number;
  rssBytes: number;
}

/**
 * Proportional set size: resident memory with pages shared between processes divided among
 * them. Summing RSS over Chromium's processes counts the shared pages many times; PSS does not.
 */
export function pssBytes(pid: number): number {
  try {
    const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const CLOCK_TICKS = 100;
const PAGE_BYTES = 4096;

export function listProcesses(): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      // After "(comm)": [0] state, [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime, [21] rss pages.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const own = Number(f[11]) + Number(f[12]);
      const ticks = own + Number(f[13]) + Number(f[14]);
      found.push({
        pid,
        ppid: Number(f[1]),
        comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        state: f[0]!,
        cpuSeconds: ticks / CLOCK_TICKS,
        ownCpuSeconds: own / CLOCK_TICKS,
        rssBytes: Number(f[21]) * PAGE_BYTES,
      });
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

/** Live (not zombie) processes below `root`, at any depth. */
export function descendants(root = process.pid, all = listProcesses()): ProcessInfo[] {
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const below = (p: ProcessInfo): boolean => {
    for (let up = p.ppid, hops = 0; up > 1 && hops < 64; up = byPid.get(up)?.ppid ?? 0, hops++) if (up === root) return true;
    return false;
  };
  return all.filter((p) => p.state !== 'Z' && below(p));
}

/** The command line of a process ('' once it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** Live descendants of this process whose command line matches `pattern`. */
export function childProcesses(pattern: string): Array<{ pid: number; cmd: string }> {
  const re = new RegExp(pattern);
  return descendants()
    .map((p) => ({ pid: p.pid, cmd: commandLine(p.pid) }))
    .filter((p) => re.test(p.cmd));
}
