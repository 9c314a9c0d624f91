import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { setInterval as every } from 'node:timers/promises';
import { abortReason, type ExecutionError } from '../contract/errors.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { Logger } from '../telemetry/types.js';

/**
 * The execution's two ceilings that only ending it can keep (docs/security.md#limits): what its
 * pages hold in the browser (BROWSER_MEMORY_MAX_BYTES) and what it wrote to its scratch folder
 * (SCRATCH_DISK_MAX_BYTES). Both are sampled while the run is live, one sample after the other;
 * the first past its ceiling is a `resource_limit_reached` event (action `ended`) and ends this
 * execution with `resource_limit`. Nothing of another execution is measured or touched.
 */

/** How often both are sampled. */
export const RESOURCE_SAMPLE_INTERVAL_MS = 1_000;

export interface ResourceWatchOptions {
  /** The session's pages' memory (BrowserSession.memoryBytes) and its ceiling; 0 is off. */
  memory?: { maxBytes: number; read: (signal: AbortSignal) => Promise<number> };
  /** The scratch folder and its ceiling; 0 is off. `skip`: folders below it not counted (the input files). */
  disk?: { maxBytes: number; dir: string; skip?: readonly string[] };
  events: ExecutionEventSink;
  log: Logger;
  /** Ends the run (ExecutionSignal.abort). */
  end: (reason: ExecutionError) => void;
  intervalMs?: number;
}

export interface ResourceWatch {
  /** Stops sampling; safe to call twice. Called as soon as the run ends. */
  stop(): void;
}

export function watchResources(options: ResourceWatchOptions): ResourceWatch {
  const { events, log } = options;
  const stopped = new AbortController();
  const memory = options.memory && options.memory.maxBytes > 0 ? options.memory : undefined;
  const disk = options.disk && options.disk.maxBytes > 0 ? options.disk : undefined;
  const over = (limit: string, max: number, value: number, what: string) => {
    const detail = `${what} held ${sizeText(value)}, past ${limit} of ${sizeText(max)}`;
    events.emit('resource_limit_reached', { limit, max, value, unit: 'bytes', action: 'ended', detail });
    log.warn({ limit, max, value }, 'resource limit reached: the execution is ended');
    options.end(abortReason('resource_limit', `the execution's ${detail}`));
    stopped.abort();
  };
  const sample = async (signal: AbortSignal) => {
    if (memory) {
      const bytes = await memory.read(signal);
      // A run that ended while it was measured is not ended again.
      if (signal.aborted) return undefined;
      if (bytes > memory.maxBytes) return over('BROWSER_MEMORY_MAX_BYTES', memory.maxBytes, bytes, "browser's pages");
    }
    if (disk) {
      const bytes = await folderBytes(disk.dir, new Set((disk.skip ?? []).map((name) => path.join(disk.dir, name))), signal);
      if (signal.aborted) return undefined;
      if (bytes > disk.maxBytes) return over('SCRATCH_DISK_MAX_BYTES', disk.maxBytes, bytes, 'scratch folder');
    }
    return undefined;
  };
  if (memory || disk) {
    void (async () => {
      // One sample at a time: the next tick waits for the last (a slow page is not asked twice).
      for await (const _ of every(options.intervalMs ?? RESOURCE_SAMPLE_INTERVAL_MS, undefined, { signal: stopped.signal })) {
        await sample(stopped.signal).catch((error: unknown) => {
          if (!stopped.signal.aborted) log.debug({ err: String(error) }, 'a resource sample failed');
        });
        if (stopped.signal.aborted) break;
      }
    })().catch(() => undefined);
  }
  return { stop: () => stopped.abort() };
}

/** A byte count as a person reads it, in the docs' units: `2.0 GiB (2147483650 bytes)`; the exact count stays for a search. */
export function sizeText(bytes: number): string {
  const units = [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const;
  const unit = units.find(([, size]) => bytes >= size);
  return unit ? `${(bytes / unit[1]).toFixed(1)} ${unit[0]} (${bytes} bytes)` : `${bytes} bytes`;
}

/** The bytes of the files below `dir` (their sizes; links not followed), leaving out `skip`. A file gone meanwhile counts 0. */
export async function folderBytes(dir: string, skip: ReadonlySet<string>, signal: AbortSignal): Promise<number> {
  signal.throwIfAborted();
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  let total = 0;
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (skip.has(full)) continue;
    if (entry.isDirectory()) total += await folderBytes(full, skip, signal);
    else total += await lstat(full).then((stat) => stat.size, () => 0);
  }
  return total;
}
