import { commandLine, descendants, listProcesses, pssBytes } from '../test/support/processes.js';

/** CPU and memory of this process and every process below it (Chromium, ffmpeg), from /proc. */
export interface TreeSample {
  rssBytes: number;
  /** Proportional set size: shared pages counted once across the tree. */
  pssBytes: number;
  cpuSeconds: number;
  processes: number;
}

export function sampleTree(root = process.pid): TreeSample {
  const all = listProcesses();
  const tree = [...all.filter((p) => p.pid === root), ...descendants(root, all)];
  return {
    rssBytes: tree.reduce((sum, p) => sum + p.rssBytes, 0),
    pssBytes: tree.reduce((sum, p) => sum + pssBytes(p.pid), 0),
    cpuSeconds: tree.reduce((sum, p) => sum + p.cpuSeconds, 0),
    processes: tree.length,
  };
}

/** Where a worker's CPU goes, by kind of process. */
export const CPU_KINDS = ['node', 'ffmpeg', 'chromium-browser', 'renderer', 'gpu', 'network', 'other-chromium'] as const;
export type CpuKind = (typeof CPU_KINDS)[number];
export type CpuByKind = Record<CpuKind, number>;

/**
 * CPU seconds of a worker's process tree (`root` is the Node process), split by kind. A process
 * that ended is counted in its parent's reaped-children time: ffmpeg (a child of Node) in Node's,
 * renderers of closed contexts in the browser's or a zygote's. Every other child of Node that ends during a
 * measurement (there is none in a running worker) would be counted as ffmpeg. Renderers of
 * closed contexts are reaped by the browser process or a zygote: their time counts as renderer.
 */
export function cpuByKind(root: number): CpuByKind {
  const all = listProcesses();
  // Zombies too: a renderer that ended and is not reaped yet still holds its CPU time, which
  // moves to its parent's reaped-children time only when it is reaped.
  const below = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) if (!below.has(p.pid) && below.has(p.ppid)) grew = below.add(p.pid) !== undefined;
  }
  const byKind: CpuByKind = { node: 0, ffmpeg: 0, 'chromium-browser': 0, renderer: 0, gpu: 0, network: 0, 'other-chromium': 0 };
  for (const p of all.filter((p) => below.has(p.pid))) {
    if (p.pid === root) {
      byKind.node += p.ownCpuSeconds;
      byKind.ffmpeg += p.cpuSeconds - p.ownCpuSeconds;
      continue;
    }
    const cmdline = commandLine(p.pid);
    // A zombie's command line is empty: it keeps the kind it was last seen with (a Chromium
    // process that ended unseen was most likely a renderer).
    const kind = cmdline === '' ? (kinds.get(p.pid) ?? (p.comm === 'ffmpeg' ? 'ffmpeg' : 'renderer')) : kindOf(p.comm, cmdline);
    kinds.set(p.pid, kind);
    byKind[kind] += p.ownCpuSeconds;
    // Reaped children: the browser and the zygotes reap the renderers of closed contexts.
    byKind[kind === 'chromium-browser' || /--type=zygote/.test(cmdline) ? 'renderer' : kind] += p.cpuSeconds - p.ownCpuSeconds;
  }
  return byKind;
}

const kinds = new Map<number, CpuKind>();

function kindOf(comm: string, cmdline: string): CpuKind {
  if (/ffmpeg/.test(comm)) return 'ffmpeg';
  const type = /--type=([\w-]+)/.exec(cmdline)?.[1];
  if (type === undefined) return /chrom/i.test(comm) || /chrom/i.test(cmdline) ? 'chromium-browser' : 'other-chromium';
  if (type === 'renderer') return 'renderer';
  if (type === 'gpu-process') return 'gpu';
  if (type === 'utility' && /network/i.test(cmdline)) return 'network';
  return 'other-chromium';
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}
