import { readdirSync, readFileSync } from 'node:fs';

/**
 * Admission by capacity (docs/operations.md#admission-by-capacity): whether this worker has room
 * for one more execution, from the memory its process tree (Node, Chromium, ffmpeg) uses and the
 * memory left on the machine or in its container. Executions differ far more in memory than
 * WORKER_CONCURRENCY can assume; this keeps a pod from taking the one that makes it OOM.
 *
 * Read from /proc and the cgroup files by hand: no maintained package reads a process tree's RSS
 * or cgroup v2 limits without native code. Off Linux every reading is unknown and all is admitted.
 */

export interface CapacityLimits {
  /** The process tree's RSS may not pass this with one more execution (0: no limit). */
  maxMemoryBytes: number;
  /** Memory left on the machine/container may not fall under this with one more execution (0: no floor). */
  minFreeBytes: number;
  /** What one more execution is expected to need. */
  perExecutionBytes: number;
}

export interface CapacityReading {
  treeRssBytes?: number;
  availableBytes?: number;
}

export interface Capacity {
  /** Room for one more execution beside `active` running ones (always true when none runs). */
  hasRoom(active: number): boolean;
  /** How many more executions fit now (memory only; the caller caps it by its concurrency). */
  freeSlots(active: number): number;
  /** The last reading (refreshed by `hasRoom`/`freeSlots` at most every `maxAgeMs`). */
  reading(): CapacityReading;
}

export function createCapacity(limits: CapacityLimits, read: () => CapacityReading = () => readMemory(process.pid), maxAgeMs = 500): Capacity {
  let last: CapacityReading = {};
  let at = -Infinity;
  const fresh = () => {
    if (Date.now() - at >= maxAgeMs) {
      last = read();
      at = Date.now();
    }
    return last;
  };
  const slots = (): number => {
    const { treeRssBytes, availableBytes } = fresh();
    const per = Math.max(1, limits.perExecutionBytes);
    let fit = Number.POSITIVE_INFINITY;
    if (limits.maxMemoryBytes > 0 && treeRssBytes !== undefined) fit = Math.min(fit, Math.floor((limits.maxMemoryBytes - treeRssBytes) / per));
    if (limits.minFreeBytes > 0 && availableBytes !== undefined) fit = Math.min(fit, Math.floor((availableBytes - limits.minFreeBytes) / per));
    return Math.max(0, fit);
  };
  return {
    // A worker running nothing always takes one: otherwise a baseline above the limit would
    // leave its jobs waiting for ever.
    hasRoom: (active) => active === 0 || slots() > 0,
    freeSlots: (active) => (active === 0 ? Math.max(1, slots()) : slots()),
    reading: () => fresh(),
  };
}

/** RSS of `root` and every process below it, and the memory available to it. */
export function readMemory(root: number): CapacityReading {
  if (process.platform !== 'linux') return {};
  return { treeRssBytes: treeRss(root), availableBytes: available() };
}

const PAGE_BYTES = 4096;

function treeRss(root: number): number | undefined {
  const parents = new Map<number, number>();
  const rss = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    // No /proc to read (hidden from the container): the figure is unknown, not zero.
    return undefined;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      // Fields after the command name (which may hold spaces), closed by the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(name), Number(fields[1]));
      rss.set(Number(name), Number(fields[21]) * PAGE_BYTES);
    } catch {
      // Ended while we looked.
    }
  }
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of parents) if (!tree.has(pid) && tree.has(ppid)) grew = tree.add(pid) !== undefined;
  }
  let sum = 0;
  for (const pid of tree) sum += rss.get(pid) ?? 0;
  return sum;
}

/** A cgroup v2 limit when the process has one (a container), else the machine's MemAvailable. */
function available(): number | undefined {
  try {
    const max = readFileSync('/sys/fs/cgroup/memory.max', 'utf8').trim();
    if (max !== 'max') return Number(max) - Number(readFileSync('/sys/fs/cgroup/memory.current', 'utf8').trim());
  } catch {
    // No cgroup v2 memory controller visible: the machine's figure.
  }
  try {
    const match = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    // No /proc/meminfo: unknown, and admission by free memory is not applied.
    return undefined;
  }
}
