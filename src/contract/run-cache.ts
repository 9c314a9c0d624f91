/**
 * A workflow version's run cache entry (docs/run-cache.md#what-it-holds): what a completed
 * execution leaves, in the queue's Redis, for the next execution of the same version, so that it
 * can run again without the model while the pages still match. The worker writes and reads it
 * (src/run-cache/); the local service only deletes it.
 *
 * Paths into the input are arrays of keys (contract/key-path.ts), checked as such when an entry is
 * read; secrets only ever appear as their placeholders.
 */
import { z } from 'zod';
import { keyPath } from './json.js';

export const RUN_CACHE_FORMAT = 'execution-worker/run-cache@4';

/** An element as the cache identifies it: the browser port's ElementIdentity, as stored. */
export const cachedElement = z.object({
  role: z.string(),
  name: z.string(),
  tag: z.string(),
  /** `type` of an input. */
  type: z.string().optional(),
  id: z.string().optional(),
  /** The `name` attribute. */
  nameAttr: z.string().optional(),
  testId: z.string().optional(),
  href: z.string().optional(),
  /** A structural path from the body (`form>div:nth-of-type(2)>button`). */
  path: z.string().optional(),
});
export type CachedElement = z.infer<typeof cachedElement>;

/** What an action may depend on in the input without being tied to one path (docs/run-cache.md#replay). */
export const actionGuard = z.object({
  /** Input paths the action may depend on. */
  paths: z.array(keyPath),
  /** The cached run's values at those paths, hashed with the entry's fingerprint. */
  digest: z.string(),
  /** `literal`: a value the model wrote itself, guarded on every input value it did not enter by name. */
  why: z.enum(['literal', 'derived', 'toggle', 'named']),
  /** Of the paths, those the action most likely comes from (the reason names them); absent when they are all the paths. */
  from: z.array(keyPath).optional(),
});
export type ActionGuard = z.infer<typeof actionGuard>;

/** One input value of the cached run, as a salted digest (secrets left out). */
export const inputDigest = z.object({ path: keyPath, digest: z.string() });
export type InputDigest = z.infer<typeof inputDigest>;

export const cachedAction = z.object({
  /** The tool (or toolset member) and its input as the model gave it: input values it entered by reference are their names, `{{path}}`. */
  tool: z.string(),
  toolsetName: z.string().optional(),
  input: z.record(z.string(), z.unknown()),
  /** `origin + path` of the page before the action, with the names of its query parameters. */
  page: z.string(),
  target: cachedElement.optional(),
  focus: cachedElement.optional(),
  /** Input paths the action entered by reference (secrets included): the new input must have a value at each. */
  refs: z.array(keyPath).optional(),
  /** Input paths the action may depend on without being tied to one: replayed only when the new input holds the same values there. */
  guard: actionGuard.optional(),
});
export type CachedAction = z.infer<typeof cachedAction>;

export const runCacheEntry = z.object({
  format: z.literal(RUN_CACHE_FORMAT),
  versionId: z.string(),
  /** What in the specification shapes the run: a cache made under another one is not replayed. */
  fingerprint: z.string(),
  /** The action space's tool type: actions of another space cannot be replayed. */
  toolType: z.string(),
  createdAt: z.string(),
  sourceExecutionId: z.string(),
  /** The cached run's model steps, each the actions the model took in one turn. */
  steps: z.array(z.array(cachedAction)),
  /** Each input value of the cached run as a salted digest: which ones a new input changed. */
  input: z.array(inputDigest),
  /**
   * Input paths an earlier run entered that a repair found the pages no longer ask for (their
   * page is gone): a new value there is not a value the replay failed to enter.
   */
  notAsked: z.array(keyPath).optional(),
});
export type RunCacheEntry = z.infer<typeof runCacheEntry>;
