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
 * are arrays of keys (domain/key-path.ts), checked as such when an entry is read.
 */
import { createHash } from 'node:crypto';
import type { Specification } from '../domain/specification.js';
import type { KeyPath } from '../domain/key-path.js';
import type { ActionGuard, InputDigest } from './values.js';

export const RUN_CACHE_FORMAT = 'execution-worker/run-cache@3';
/**
 * Formats this worker reads but never replays, and why (docs/run-cache.md#earlier-formats): such
 * an entry counts as none and is replaced by the next completed run.
 */
export const EARLIER_RUN_CACHE_FORMATS: ReadonlyMap<string, string> = new Map([
  ['execution-worker/run-cache@1', 'may hold input values as literals'],
  ['execution-worker/run-cache@2', 'tied values to the input by equality'],
]);

/** An element as the cache identifies it (the browser port's ElementIdentity, restated for the domain). */
export interface CachedElement {
  role: string;
  name: string;
  tag: string;
  type?: string;
  id?: string;
  nameAttr?: string;
  testId?: string;
  href?: string;
  path?: string;
}

export interface CachedAction {
  /** The tool (or toolset member) and its input as the model gave it: input values it entered by reference are their names, `{{path}}`. */
  tool: string;
  toolsetName?: string;
  input: Record<string, unknown>;
  /** `origin + path` of the page before the action, with the names of its query parameters. */
  page: string;
  target?: CachedElement;
  focus?: CachedElement;
  /** Input paths the action entered by reference (secrets included): the new input must have a value at each. */
  refs?: KeyPath[];
  /** Input paths the action may depend on without being tied to one: replayed only when the new input holds the same values there. */
  guard?: ActionGuard;
}

export interface RunCacheEntry {
  format: typeof RUN_CACHE_FORMAT;
  versionId: string;
  /** What in the specification shapes the run: a cache made under another one is not replayed. */
  fingerprint: string;
  /** The action space's tool type: actions of another space cannot be replayed. */
  toolType: string;
  createdAt: string;
  sourceExecutionId: string;
  steps: CachedAction[][];
  /** Each input value of the cached run as a salted digest (secrets left out): which ones a new input changed. */
  input: InputDigest[];
  /**
   * Input paths an earlier run entered that a repair found the pages no longer ask for (their
   * page is gone): a new value there is not a value the replay failed to enter.
   */
  notAsked?: KeyPath[];
}

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

/** Reads a stored entry; anything not of this format, or not of its shape, is no cache at all. */
export function parseCacheEntry(raw: unknown): RunCacheEntry | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const e = raw as Partial<RunCacheEntry>;
  if (e.format !== RUN_CACHE_FORMAT || typeof e.versionId !== 'string' || typeof e.fingerprint !== 'string' || typeof e.toolType !== 'string' || !Array.isArray(e.steps)) return undefined;
  if (!Array.isArray(e.input) || !e.input.every((d: unknown) => isObject(d) && isKeyPath(d.path) && typeof d.digest === 'string')) return undefined;
  if (e.notAsked !== undefined && !(Array.isArray(e.notAsked) && e.notAsked.every(isKeyPath))) return undefined;
  return e.steps.every((step) => Array.isArray(step) && step.every(isCachedAction)) ? (e as RunCacheEntry) : undefined;
}

function isCachedAction(a: unknown): a is CachedAction {
  if (!isObject(a) || typeof a.tool !== 'string' || typeof a.page !== 'string' || !isObject(a.input)) return false;
  if (a.refs !== undefined && !(Array.isArray(a.refs) && a.refs.every(isKeyPath))) return false;
  const guard = a.guard;
  if (guard !== undefined && !(isObject(guard) && Array.isArray(guard.paths) && guard.paths.every(isKeyPath) && typeof guard.digest === 'string' && ['derived', 'toggle', 'named'].includes(String(guard.why)))) return false;
  return [a.target, a.focus].every((el) => el === undefined || (isObject(el) && typeof el.role === 'string' && typeof el.name === 'string'));
}

function isKeyPath(path: unknown): path is KeyPath {
  return Array.isArray(path) && path.every((key) => typeof key === 'string');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
