/**
 * The names by which the worker reaches its scripts in a page: shared by the page code (which
 * installs them) and the Node side (which calls them). Neither is enumerable in the page.
 */

/** The page structure's global in the worker's isolated world (structure.ts). */
export const STRUCTURE_KEY = '__executionWorkerStructure';
/** The settle probe's global in every document's own world (settle-probe.ts). */
export const PROBE_KEY = '__executionWorkerSettle';
/** Where a document keeps its still-waits under way: a registered symbol, out of the page's own names. */
export const WAITS_KEY = 'execution-worker-settle-waits';
