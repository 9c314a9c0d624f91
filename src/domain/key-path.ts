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
