/**
 * Paths into JSON values whose keys come from outside: an input payload a caller wrote, an output
 * a model chose the keys of, a page's words (docs/security.md#keys-from-outside).
 *
 * A path is an array of keys, never a dotted string: `["U.S. total"]` and `["U", "S", " total"]`
 * are different paths, and a key may be any string, `__proto__` included. Reads and writes touch
 * own properties only, so no key — however it is spelled — reaches a prototype: a read of
 * `["constructor", "prototype"]` finds nothing in `{}`, and a write defines an own property on a
 * copy. This is a property of the functions below, not a list of refused names.
 *
 * Text form (for `{{path}}` placeholders, log lines, reasons): keys made only of letters, digits,
 * `_` and `-` are written bare and joined by `.` (`login.password`, `cards.0.pin`); any other key
 * is written as a JSON string in brackets (`totals["U.S. total"]`, `["a b"]`). `parsePath`
 * reads exactly what `formatPath` writes, and also `cards[0]` (an index in brackets).
 */

/** A path into a JSON value: object keys and array indexes (as decimal strings), outermost first. */
export type KeyPath = readonly string[];

const BARE = /^[A-Za-z0-9_-]+$/;

/** `["login", "password"]` → `login.password`; `["U.S. total"]` → `["U.S. total"]`. */
export function formatPath(path: KeyPath): string {
  let out = '';
  for (const key of path) {
    if (BARE.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

/**
 * The path `formatPath` wrote, or undefined when the text is not one. Whitespace around the
 * whole is allowed (`{{ login.password }}`), inside it is not (except inside a quoted key).
 */
export function parsePath(text: string): KeyPath | undefined {
  const s = text.trim();
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    const ch = s[i]!;
    if (ch === '[') {
      const close = closingBracket(s, i);
      if (close < 0) return undefined;
      const inner = s.slice(i + 1, close);
      if (/^\d+$/.test(inner)) out.push(String(Number(inner)));
      else {
        let key: unknown;
        try {
          key = JSON.parse(inner);
        } catch {
          return undefined;
        }
        if (typeof key !== 'string' || !inner.startsWith('"')) return undefined;
        out.push(key);
      }
      i = close + 1;
    } else {
      if (ch === '.') {
        if (out.length === 0) return undefined;
        i++;
      } else if (out.length > 0) return undefined;
      const match = /^[A-Za-z0-9_-]+/.exec(s.slice(i));
      if (!match) return undefined;
      out.push(match[0]);
      i += match[0].length;
    }
  }
  return out;
}

/** Index of the `]` that closes the bracket opened at `open`, skipping a JSON string inside. */
function closingBracket(s: string, open: number): number {
  let i = open + 1;
  if (s[i] === '"') {
    i++;
    while (i < s.length && s[i] !== '"') i += s[i] === '\\' ? 2 : 1;
    if (i >= s.length) return -1;
    i++;
  } else {
    while (i < s.length && /\d/.test(s[i]!)) i++;
  }
  return s[i] === ']' ? i : -1;
}

/** A key for maps and sets of paths (unambiguous, unlike a dotted string). */
export function pathId(path: KeyPath): string {
  return JSON.stringify(path);
}

export function samePath(a: KeyPath, b: KeyPath): boolean {
  return a.length === b.length && a.every((key, i) => key === b[i]);
}

/** Whether `outer` is `inner` or one of its ancestors. */
export function isPrefix(outer: KeyPath, inner: KeyPath): boolean {
  return outer.length <= inner.length && outer.every((key, i) => key === inner[i]);
}

/** The value at `path`, reading own properties only; undefined where there is none. */
export function valueAt(root: unknown, path: KeyPath): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d*)$/.test(key)) return undefined;
      node = node[Number(key)];
    } else {
      if (!Object.hasOwn(node, key)) return undefined;
      node = (node as Record<string, unknown>)[key];
    }
  }
  return node;
}

/**
 * A copy of `root` with the value at `path` set (the containers along it copied, missing ones
 * made: an object, or an array where the key is an index and the container is an array).
 * Keys become own data properties; nothing is written through a prototype.
 */
export function withValueAt(root: unknown, path: KeyPath, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string, ...string[]];
  if (Array.isArray(root) && /^(0|[1-9]\d*)$/.test(head)) {
    const copy = [...root];
    copy[Number(head)] = withValueAt(copy[Number(head)], rest, value);
    return copy;
  }
  const copy: Record<string, unknown> = root !== null && typeof root === 'object' && !Array.isArray(root) ? { ...(root as Record<string, unknown>) } : {};
  const inner = Object.hasOwn(copy, head) ? copy[head] : undefined;
  Object.defineProperty(copy, head, { value: withValueAt(inner, rest, value), enumerable: true, writable: true, configurable: true });
  return copy;
}

/** A JSON value's leaves (strings, numbers, booleans, null) with their paths, in document order. */
export function leavesOf(value: unknown): Array<{ path: KeyPath; value: string | number | boolean | null }> {
  const out: Array<{ path: KeyPath; value: string | number | boolean | null }> = [];
  const walk = (node: unknown, path: string[]) => {
    if (node === null || typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean') out.push({ path, value: node });
    else if (Array.isArray(node)) node.forEach((item, i) => walk(item, [...path, String(i)]));
    else if (typeof node === 'object') for (const [key, item] of Object.entries(node)) walk(item, [...path, key]);
  };
  walk(value, []);
  return out;
}

/**
 * How many paths one rewrite takes (`rewriteAt`), and so how many secrets one input may have
 * (docs/secrets.md#bounds). A form has a few; a million-key input marked secret by an
 * `additionalProperties` schema is refused with a reason rather than worked through.
 */
export const MAX_REWRITE_PATHS = 50_000;

/** Thrown by `rewriteAt` when given more than `MAX_REWRITE_PATHS` paths; `code` is stable. */
export class TooManyPathsError extends Error {
  readonly code = 'too_many_secrets';
  constructor(readonly count: number) {
    super(`the input has ${count} secret values; at most ${MAX_REWRITE_PATHS} are taken`);
  }
}

/** A set of paths as a tree of keys: each node is the paths' next keys, `end` where one ends. */
interface PathTrie {
  end: boolean;
  next: Map<string, PathTrie>;
}

function trieOf(paths: readonly KeyPath[]): PathTrie {
  if (paths.length > MAX_REWRITE_PATHS) throw new TooManyPathsError(paths.length);
  const root: PathTrie = { end: false, next: new Map() };
  for (const path of paths) {
    let node = root;
    for (const key of path) {
      let child = node.next.get(key);
      if (!child) node.next.set(key, (child = { end: false, next: new Map() }));
      node = child;
    }
    node.end = true;
  }
  return root;
}

/**
 * The outermost of `paths`, each once, in the order given: a path under another one (or equal to
 * one before it) is left out. One pass over a tree of the paths, so linear in their total length
 * (a search of the kept ones for each path would be quadratic in their count).
 */
export function outermostPaths<P extends { readonly path: KeyPath }>(items: readonly P[]): P[] {
  // Shortest first, so an ancestor is kept before its descendants are looked at.
  const ordered = [...items].sort((a, b) => a.path.length - b.path.length);
  const kept = trieOf([]);
  const out: P[] = [];
  for (const item of ordered) {
    let node = kept;
    let covered = node.end;
    for (const key of item.path) {
      if (covered) break;
      let child = node.next.get(key);
      if (!child) node.next.set(key, (child = { end: false, next: new Map() }));
      node = child;
      covered = node.end;
    }
    if (covered) continue;
    node.end = true;
    out.push(item);
  }
  return out;
}

/**
 * A copy of `root` with the value at each of `paths` replaced by `fn(path, value)` (value
 * undefined where there is none), in one pass: each container on the way to a path is copied
 * once, however many paths go through it, so the cost is the paths' total length plus the sizes
 * of the containers copied — not one copy of the whole value per path, which made a 10,000-secret
 * input take minutes. The same result as applying `withValueAt` per path (missing containers
 * made, own data properties only, nothing written through a prototype); where one path is under
 * another, the outer one's new value is the one rewritten further. At most `MAX_REWRITE_PATHS`
 * paths (`TooManyPathsError`).
 */
export function rewriteAt(root: unknown, paths: readonly KeyPath[], fn: (path: KeyPath, value: unknown) => unknown): unknown {
  if (paths.length === 0) return root;
  const trie = trieOf(paths);
  const at: string[] = [];
  const visit = (node: unknown, here: PathTrie): unknown => {
    let value = here.end ? fn([...at], node) : node;
    if (here.next.size === 0) return value;
    if (Array.isArray(value)) {
      const indexes = [...here.next.keys()];
      if (indexes.every((key) => /^(0|[1-9]\d*)$/.test(key))) {
        const copy = [...value];
        for (const key of indexes) {
          at.push(key);
          copy[Number(key)] = visit(copy[Number(key)], here.next.get(key)!);
          at.pop();
        }
        return copy;
      }
      // A key that is no index makes the array an object, as `withValueAt` does.
      value = undefined;
    }
    const copy: Record<string, unknown> = value !== null && typeof value === 'object' ? { ...(value as Record<string, unknown>) } : {};
    for (const [key, child] of here.next) {
      at.push(key);
      const inner = Object.hasOwn(copy, key) ? copy[key] : undefined;
      Object.defineProperty(copy, key, { value: visit(inner, child), enumerable: true, writable: true, configurable: true });
      at.pop();
    }
    return copy;
  };
  return visit(root, trie);
}
