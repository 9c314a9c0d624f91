/**
 * The run cache (contract §11): what a completed execution leaves for the next execution of the
 * same workflow version, so that it can run again without the model while the pages still
 * match. Pure data and the rules on it; the runner records and replays (runner/cached-run.ts),
 * a store keeps it (Redis, shared by the fleet).
 *
 * A cached run is its model steps, each the actions the model took in one turn, every action
 * with its precondition: the page (URL without query values) and the element it acted on (role
 * and accessible name first). Text that came from the input payload is kept as the input's path
 * (`{{customer.name}}`), never as the value; secrets only ever appear as their placeholders.
 */
import { createHash } from 'node:crypto';
import type { Specification } from './specification.js';

export const RUN_CACHE_FORMAT = 'execution-worker/run-cache@1';

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
  /** The tool (or toolset member) and its input as the model gave it, input values as `{{path}}`. */
  tool: string;
  toolsetName?: string;
  input: Record<string, unknown>;
  /** `origin + path` of the page before the action, with the names of its query parameters. */
  page: string;
  target?: CachedElement;
  focus?: CachedElement;
}

/** How a value of the output was found on the final page: an element, and the words around the value in its text. */
export interface OutputSource {
  /** JSON path in the output (`orderId`, `lines.0.total`). */
  path: string;
  kind: 'string' | 'number';
  element: CachedElement;
  /** The element's text before and after the value (input values as `{{path}}`). */
  before: string;
  after: string;
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
  /** Where each output value was read, when all of them could be found. */
  output?: { sources: OutputSource[]; shape: unknown };
}

/** What `output.json` says of the cache (contract §11). */
export interface CacheReport {
  used: boolean;
  replayedSteps: number;
  modelSteps: number;
  /** The replayed step (1-based) at which the model took over; null when it did not. */
  fallbackAtStep: number | null;
  reason: string | null;
}

/** Where a version's cache is kept in the queue's Redis: shared by every worker, cleared through the local API. */
export function runCacheKey(queuePrefix: string, queueName: string, versionId: string): string {
  return `${queuePrefix}:${queueName}:run-cache:${versionId}`;
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

/** Input values worth templating: strings of 2+ characters (and numbers), with their paths. */
export function inputValues(maskedInput: unknown): Array<{ path: string; value: string }> {
  const out: Array<{ path: string; value: string }> = [];
  const walk = (value: unknown, path: string[]) => {
    if (typeof value === 'string') {
      // A secret is already its own placeholder in what the model wrote.
      if (value.length >= 2 && !/^\{\{[^}]+\}\}$/.test(value)) out.push({ path: path.join('.'), value });
    } else if (typeof value === 'number' && Number.isFinite(value)) {
      const text = String(value);
      if (text.length >= 2) out.push({ path: path.join('.'), value: text });
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, String(i)]));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  walk(maskedInput, []);
  // Longest first: a value that contains another is templated whole.
  return out.filter((v) => v.path !== '').sort((a, b) => b.value.length - a.value.length);
}

/** Replaces input values in text with `{{path}}` (whole values, or parts of 4+ characters). */
export function templateText(text: string, values: ReadonlyArray<{ path: string; value: string }>): string {
  let out = text;
  for (const { path, value } of values) {
    if (out === value) return `{{${path}}}`;
    if (value.length >= 4 && out.includes(value)) out = out.split(value).join(`{{${path}}}`);
  }
  return out;
}

/** Every string in a JSON value templated. */
export function templateValue<T>(value: T, values: ReadonlyArray<{ path: string; value: string }>): T {
  if (typeof value === 'string') return templateText(value, values) as T;
  if (Array.isArray(value)) return value.map((v) => templateValue(v, values)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templateValue(v, values)])) as T;
  return value;
}

/**
 * Fills `{{path}}` with the new input's values. Secret paths (and paths the input lacks) keep
 * their placeholder: secrets are revealed where they are typed, as in any run.
 */
export function fillTemplate<T>(value: T, maskedInput: unknown, secretPaths: readonly string[]): T {
  if (typeof value === 'string') {
    return value.replace(/\{\{\s*([A-Za-z0-9_.\-[\]]+)\s*\}\}/g, (whole, path: string) => {
      const normalised = path.replace(/\[(\d+)\]/g, '.$1');
      if (secretPaths.includes(normalised)) return whole;
      const found = lookup(maskedInput, normalised.split('.'));
      return typeof found === 'string' || typeof found === 'number' ? String(found) : whole;
    }) as T;
  }
  if (Array.isArray(value)) return value.map((v) => fillTemplate(v, maskedInput, secretPaths)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillTemplate(v, maskedInput, secretPaths)])) as T;
  return value;
}

function lookup(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Reads a stored entry; anything not of this format is no cache at all. */
export function parseCacheEntry(raw: unknown): RunCacheEntry | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const e = raw as Partial<RunCacheEntry>;
  if (e.format !== RUN_CACHE_FORMAT || typeof e.versionId !== 'string' || typeof e.fingerprint !== 'string' || typeof e.toolType !== 'string' || !Array.isArray(e.steps)) return undefined;
  if (!e.steps.every((step) => Array.isArray(step) && step.every((a) => a && typeof a === 'object' && typeof (a as CachedAction).tool === 'string' && typeof (a as CachedAction).page === 'string'))) return undefined;
  return e as RunCacheEntry;
}
