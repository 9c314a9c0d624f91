/**
 * The run cache's port (docs/run-cache.md#where-it-is-kept): where each workflow version's cached
 * run is kept. The cache reads the page only through the agent's ports (the browser session and
 * the action space), like the model's run.
 */

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
