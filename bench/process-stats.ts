import { readdirSync, readFileSync } from 'node:fs';

/** CPU and memory of this process and every process below it (Chromium, ffmpeg), from /proc. */
export interface TreeSample {
  rssBytes: number;
  cpuSeconds: number;
  processes: number;
}

const CLOCK_TICKS = 100;
const PAGE_BYTES = 4096;

export function sampleTree(root = process.pid): TreeSample {
  const parents = new Map<number, number>();
  const stats = new Map<number, { rss: number; cpu: number }>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // After the comm field: [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime
      // (children already reaped, e.g. finished ffmpeg processes), [21] rss in pages.
      parents.set(pid, Number(fields[1]));
      const cpuTicks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      stats.set(pid, { rss: Number(fields[21]) * PAGE_BYTES, cpu: cpuTicks / CLOCK_TICKS });
    } catch {
      // gone
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = parents.get(p) ?? 0, hops++) if (p === root) return true;
    return false;
  };
  let rssBytes = 0;
  let cpuSeconds = 0;
  let processes = 0;
  for (const [pid, s] of stats) {
    if (!inTree(pid)) continue;
    rssBytes += s.rss;
    cpuSeconds += s.cpu;
    processes++;
  }
  return { rssBytes, cpuSeconds, processes };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}
