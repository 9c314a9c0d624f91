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

/** An element's states as a read of the page shows them (docs/run-cache.md#effects); only those an action changed are kept. */
export const elementState = z.object({
  expanded: z.boolean().optional(),
  checked: z.boolean().optional(),
  selected: z.boolean().optional(),
  pressed: z.boolean().optional(),
});
export type CachedElementState = z.infer<typeof elementState>;

/**
 * What an action did to the element it acted on: the states it found and the states it left.
 * A replay passes the action over when the element is in `after` already, does it when it is in
 * `before`, and has the step repaired otherwise (docs/run-cache.md#effects).
 */
export const actionEffect = z.object({ before: elementState, after: elementState });
export type CachedEffect = z.infer<typeof actionEffect>;

/**
 * How a value is computed from one input value (docs/run-cache.md#sources): a closed set. Each
 * applies only to a value of its own shape (a word to a value of several words on one line, a
 * line to a value of several lines without blank ones, a paragraph to one with blank lines, an
 * item to a list), so that two of them never give the same literal from one value.
 */
export const derivation = z.discriminatedUnion('how', [
  /** The whole value, written out rather than entered by name. */
  z.object({ how: z.literal('whole') }),
  /** Its `index`th word (from 0: the first word). */
  z.object({ how: z.literal('word'), index: z.number().int().min(0) }),
  /** Its first `length` characters (3 or more, ending inside a word). */
  z.object({ how: z.literal('prefix'), length: z.number().int().min(3) }),
  /** Its `index`th line, paragraph or list item: a value entered in pieces. */
  z.object({ how: z.literal('piece'), unit: z.enum(['line', 'paragraph', 'item']), index: z.number().int().min(0) }),
  z.object({ how: z.literal('case'), to: z.enum(['lower', 'upper', 'title']) }),
  /** A number in another format: `decimals` after the point, a grouping of thousands, a text before and after (`€ `). */
  z.object({ how: z.literal('number'), decimals: z.number().int().min(0).max(10), group: z.enum(['', ',', '.', ' ', "'"]), point: z.enum(['.', ',']), before: z.string().max(8), after: z.string().max(8) }),
  /** An ISO date in another format: tokens `YYYY`, `YY`, `MM`, `M`, `DD`, `D`, `MMMM`, `MMM` and text. */
  z.object({ how: z.literal('date'), format: z.string().max(40) }),
]);
export type Derivation = z.infer<typeof derivation>;

/** A piece of a name pattern: text of the version, or an input value. */
export const namePart = z.union([z.object({ text: z.string() }), z.object({ path: keyPath })]);
export type NamePart = z.infer<typeof namePart>;

/**
 * Where a value a cached action entered (or the element it acted on) comes from
 * (docs/run-cache.md#sources): the replay computes it from the same source with the new input.
 */
export const valueSource = z.discriminatedUnion('kind', [
  /** Input values entered by name (`{{path}}` in the cached input). */
  z.object({ kind: z.literal('input'), paths: z.array(keyPath).min(1) }),
  /** Text of the version's prompt or steps, in no input value: the same on every run of the version. */
  z.object({ kind: z.literal('constant'), text: z.string() }),
  /** One derivation of one input value; the cached input holds no literal there. */
  z.object({ kind: z.literal('derived'), path: keyPath, derivation }),
  /** An element named after input values (`Invoice #{{number}} from {{vendor}}`): it must match exactly one element. */
  z.object({ kind: z.literal('pattern'), parts: z.array(namePart).min(1) }),
  /** Input files uploaded by their input paths (each path holds `{"$file": name}`); the cached input holds no file name. */
  z.object({ kind: z.literal('file'), paths: z.array(keyPath).min(1) }),
]);
export type ValueSource = z.infer<typeof valueSource>;

/** Which part of the action a source binds: a key of its input, or its target's name (a pattern only). */
export const valueBinding = z
  .object({ at: z.enum(['text', 'value', 'paths', 'target']), source: valueSource })
  .refine((b) => (b.at === 'target') === (b.source.kind === 'pattern'), { message: 'a pattern binds the target, and only a pattern does' })
  .refine((b) => b.source.kind !== 'file' || b.at === 'paths', { message: 'a file source binds the upload\'s paths' });
export type ValueBinding = z.infer<typeof valueBinding>;

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
  /** The state the action brought about on its element; absent when a read showed none it changed (the action then keeps the precondition alone). */
  effect: actionEffect.optional(),
  /** Made by the repair of the run that wrote the entry (docs/run-cache.md#repair-not-restart), in place of the cached actions it stood in for. */
  byRepair: z.boolean().optional(),
  /**
   * Where each value it entered came from (docs/run-cache.md#sources). A `derived` or `file`
   * source stands in for its key of `input`, which then holds nothing: the replay computes it.
   */
  sources: z.array(valueBinding).optional(),
}).refine((a) => (a.sources ?? []).every((b) => b.at === 'target' || !['derived', 'file'].includes(b.source.kind) || !(b.at in a.input)), {
  message: 'a derived or file source stands in for its key: the cached input holds no literal there',
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
  /** What the repairs of the run that wrote the entry changed: the earlier entry's step, why, its actions before and the repair's after. */
  repairs: z.array(z.object({ cachedStep: z.number().int().min(1), reason: z.string(), before: z.array(z.string()), after: z.array(z.string()) })).optional(),
});
export type RunCacheEntry = z.infer<typeof runCacheEntry>;
