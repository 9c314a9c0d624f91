import type { KeyPath } from './key-path.js';

/**
 * How deep a JSON value from outside may nest (docs/secrets.md#bounds): an input, an output, a
 * payload or output schema, a version's configuration. Forms, records and the schemas that
 * describe them are a few levels deep; 64 leaves room for any of them.
 *
 * The bound is what keeps every later walk of such a value safe: structured clone (a worker
 * thread's `postMessage`), `JSON.stringify`, Ajv's compiler and the secret-mark walk all recurse,
 * and each runs out of stack a few thousand levels down, in a way a `try` around the call does
 * not always reach (a rejection nobody awaits ends the process). A value is measured here, once,
 * where it enters, by a loop that cannot overflow; deeper values are refused with the path to
 * where they pass the bound.
 */
export const MAX_DEPTH = 64;

/** Where a value first nests deeper than the bound: the path to a container at depth `max`. */
export interface DepthFault {
  path: KeyPath;
  max: number;
}

interface Visit {
  node: object;
  depth: number;
  key: string;
  parent: Visit | undefined;
}

/**
 * The first place `value` nests deeper than `max` levels of objects and arrays, or undefined
 * when it does not. The value itself is at depth 0, so a value with `max` levels of nesting
 * (`max` brackets deep) passes and one with `max + 1` does not.
 *
 * A loop with its own stack, not a recursion: the value may be a million levels deep. Its cost
 * is linear in the value's size: each node is visited once, the children are read by
 * `Object.keys` (own enumerable properties, as JSON has), and a node's path is kept as a link to
 * its parent, written out only for the fault. A value that is not a tree (an object reached
 * twice, or a cycle; never the case for parsed JSON) is walked again only when reached deeper
 * than before, so it too ends, at the bound at the latest.
 */
export function findTooDeep(value: unknown, max = MAX_DEPTH): DepthFault | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const seen = new WeakMap<object, number>();
  const stack: Visit[] = [{ node: value, depth: 0, key: '', parent: undefined }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    if (visit.depth >= max) return { path: pathOf(visit), max };
    const before = seen.get(visit.node);
    if (before !== undefined && before >= visit.depth) continue;
    seen.set(visit.node, visit.depth);
    const node = visit.node as Record<string, unknown>;
    for (const key of Object.keys(node)) {
      const child = node[key];
      if (child !== null && typeof child === 'object') stack.push({ node: child, depth: visit.depth + 1, key, parent: visit });
    }
  }
  return undefined;
}

function pathOf(visit: Visit): KeyPath {
  const keys: string[] = [];
  for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent) keys.push(at.key);
  return keys.reverse();
}

/** The words for a fault: `it nests deeper than 64 levels of objects and arrays`. */
export function depthReason(max = MAX_DEPTH): string {
  return `it nests deeper than ${max} levels of objects and arrays`;
}

/** Why a value is refused before any walk of it, or undefined: it nests deeper than `max`. */
export function depthProblem(value: unknown, max = MAX_DEPTH): string | undefined {
  return findTooDeep(value, max) ? depthReason(max) : undefined;
}
