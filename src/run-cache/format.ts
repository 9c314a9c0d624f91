/**
 * The run cache's entry (docs/run-cache.md#what-it-holds): what a completed execution leaves for
 * the next execution of the same workflow version, so that it can run again without the model
 * while the pages still match. Pure data and the rules on it; cached-run.ts records and replays
 * it, a store keeps it (Redis, shared by the fleet).
 *
 * A cached run is its model steps, each the actions the model took in one turn, every action
 * with its precondition: the page (URL without query values) and the element it acted on (role
 * and accessible name first), the input paths it entered by name and the guard of what else in
 * the input it may depend on (values.ts); secrets only ever appear as their placeholders. Paths
 * are arrays of keys (contract/key-path.ts), checked as such when an entry is read. The entry's
 * shape is declared in contract/run-cache.ts.
 */
import { createHash } from 'node:crypto';
import { runCacheEntry, type RunCacheEntry } from '../contract/run-cache.js';
import type { Specification } from '../contract/specification.js';

/**
 * Formats this worker reads but never replays, and why (docs/run-cache.md#earlier-formats): such
 * an entry counts as none and is replaced by the next completed run.
 */
export const EARLIER_RUN_CACHE_FORMATS: ReadonlyMap<string, string> = new Map([
  ['execution-worker/run-cache@1', 'may hold input values as literals'],
  ['execution-worker/run-cache@2', 'tied values to the input by equality'],
  ['execution-worker/run-cache@3', 'guarded only the literals it recognised as written from the input'],
]);

/** The parts of a specification that shape a run, hashed with the action space. */
export function cacheFingerprint(spec: Specification, toolType: string): string {
  const shape = {
    prompt: spec.prompt,
    steps: spec.steps ?? [],
    allowedDomains: spec.allowedDomains,
    startUrl: spec.startUrl ?? null,
    outputSchema: spec.outputSchema ?? null,
    toolType,
  };
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 32);
}

/** A page as a precondition: origin and path, and the names (not values) of its query parameters. */
export function pageShape(url: string): string {
  try {
    const u = new URL(url);
    const keys = [...new Set([...u.searchParams.keys()])].sort();
    return `${u.origin}${u.pathname}${keys.length ? `?${keys.join('&')}` : ''}`;
  } catch {
    return url;
  }
}

/**
 * Whether the page is where a cached action was: the same shape, or the same once the numbers in
 * its path are set aside (`/invoice/1042` and `/invoice/1077`: a record's own page, by its id).
 */
export function samePage(cached: string, now: string): boolean {
  if (cached === now) return true;
  try {
    const [a, b] = [new URL(cached), new URL(now)];
    return a.origin === b.origin && a.search === b.search && numbersAside(a.pathname) === numbersAside(b.pathname);
  } catch {
    return false;
  }
}

/** Text with its runs of digits set aside: the shape of a name or path that embeds a record's id. */
export function numbersAside(text: string): string {
  return text.replace(/\d+/g, '#');
}

/** Reads a stored entry (contract/run-cache.ts); anything not of this format, or not of its shape, is no cache at all. */
export function parseCacheEntry(raw: unknown): RunCacheEntry | undefined {
  const read = runCacheEntry.safeParse(raw);
  return read.success ? read.data : undefined;
}
