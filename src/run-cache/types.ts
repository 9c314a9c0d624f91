/**
 * The run cache's ports (docs/run-cache.md): where each workflow version's cached run is kept,
 * and the few page reads the cache needs to find and re-read an output on the final page.
 */
import type { BrowserTab } from '../browser/types.js';

/**
 * Where the run cache of each workflow version is kept (docs/run-cache.md): shared by every worker
 * of the fleet. Values are JSON; the run cache checks their format.
 */
export interface RunCacheStore {
  get(versionId: string, signal: AbortSignal): Promise<unknown | undefined>;
  put(versionId: string, entry: unknown): Promise<void>;
  /** Forgets a version's cache; false when there was none. */
  delete(versionId: string): Promise<boolean>;
}

/**
 * What the run cache reads of the page (docs/run-cache.md#replay): where an output value
 * shows, what that element says now, and the page's text for a model that takes over. Only
 * these reads: the cache never touches the page's DOM itself.
 */
export type PageReader = Pick<BrowserTab, 'findText' | 'readText' | 'pageText'>;
