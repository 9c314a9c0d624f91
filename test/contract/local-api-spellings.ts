/**
 * Ways to spell one path in a request target. Some name the same route to Fastify (a
 * percent-encoded letter, an absolute-form target), some name none (a dot segment, which Fastify
 * does not resolve), some may name another route. The access tests send each of them and ask
 * the router itself which route it reaches; whatever it reaches, the access rule of that route
 * must hold.
 */

export interface Spelling {
  name: string;
  /** The target for `path` (`/api/workflows/x`) on the server at `origin` (`http://127.0.0.1:8080`). */
  spell(path: string, origin: string): string;
}

const hex = (c: string, upper = false): string => {
  const code = c.codePointAt(0)!.toString(16).padStart(2, '0');
  return `%${upper ? code.toUpperCase() : code}`;
};

/** The path's segments, without the leading slash: `/api/workflows` → `['api', 'workflows']`. */
const segments = (path: string): string[] => path.slice(1).split('/');
const join = (parts: string[]): string => `/${parts.join('/')}`;

/** Replaces the first letter of the first segment that has one. */
function encodeFirstLetter(path: string, upper: boolean): string {
  return path.replace(/[A-Za-z]/, (c) => hex(c, upper));
}

/** Every unreserved character of every segment as %XX (the slashes stay). */
function encodeEverything(path: string): string {
  return join(segments(path).map((s) => [...s].map((c) => (/[A-Za-z0-9._~-]/.test(c) ? hex(c) : c)).join('')));
}

export const SPELLINGS: readonly Spelling[] = [
  { name: 'as written', spell: (p) => p },
  { name: 'a letter percent-encoded', spell: (p) => encodeFirstLetter(p, false) },
  { name: 'a letter percent-encoded, upper-case hex', spell: (p) => encodeFirstLetter(p, true) },
  { name: 'every character percent-encoded', spell: (p) => encodeEverything(p) },
  { name: 'absolute-form target', spell: (p, origin) => `${origin}${p}` },
  { name: 'absolute-form target, encoded letter', spell: (p, origin) => `${origin}${encodeFirstLetter(p, false)}` },
  { name: 'a query string', spell: (p) => `${p}?x=1` },
  { name: 'a dot segment', spell: (p) => `/${segments(p)[0]}/..${p}` },
  { name: 'an encoded dot segment', spell: (p) => `/${segments(p)[0]}/%2e%2e${p}` },
  { name: 'a single-dot segment', spell: (p) => `/.${p}` },
  { name: 'an encoded slash', spell: (p) => p.replace(/(.)\//, '$1%2f') },
  { name: 'an encoded slash, upper-case', spell: (p) => p.replace(/(.)\//, '$1%2F') },
  { name: 'a doubled leading slash', spell: (p) => `/${p}` },
  { name: 'a doubled inner slash', spell: (p) => p.replace(/(.)\//, '$1//') },
  { name: 'a ; parameter on the first segment', spell: (p) => p.replace(/^(\/[^/]*)/, '$1;x=1') },
  { name: 'a ; parameter at the end', spell: (p) => `${p};x=1` },
  { name: 'a trailing slash', spell: (p) => `${p}/` },
  { name: 'the first segment in upper case', spell: (p) => p.replace(/^\/[^/]*/, (s) => s.toUpperCase()) },
  { name: 'a backslash for a slash', spell: (p) => p.replace(/(.)\//, '$1\\') },
  { name: 'a byte that is not UTF-8', spell: (p) => `${p}%C1` },
];
