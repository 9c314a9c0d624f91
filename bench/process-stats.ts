import { descendants, listProcesses, pssBytes } from '../test/support/processes.js';

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

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}
