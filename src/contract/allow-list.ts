/**
 * The one parser of allow-list entries (docs/specification.md#the-allow-list), used by the
 * worker (specification check, the browser's host matcher) and by the local API alike, so an
 * entry one accepts the other never refuses.
 *
 *   `example.com`        that host, any port
 *   `example.com:8443`   that host, port 8443 only
 *   `*.example.com`      example.com and every name below it (a port may follow, as above)
 *   `192.0.2.7`, `[2001:db8::1]`, `[::1]:3000`   that address (and port) only
 *
 * Hosts are compared in the form WHATWG URL parsing gives them (case folded, IDN to punycode,
 * every IPv4 spelling to a dotted quad, IPv6 compressed), trailing dot dropped. A wildcard on a
 * public suffix (`*.com`, `*.co.uk`, `*.r2.dev`) is refused: the Public Suffix List comes from
 * `tldts`, which bundles it (no network at run time), private section included.
 */
import net from 'node:net';
import { getPublicSuffix } from 'tldts';

import { ExecutionError } from './errors.js';

/** One parsed allow-list entry; `port` undefined means any port. */
export type AllowEntry =
  /** `example.com`: that host only. */
  | { kind: 'host'; host: string; port?: number }
  /** `*.example.com`: example.com and every name below it. */
  | { kind: 'subtree'; base: string; port?: number }
  /** `192.0.2.7`, `[2001:db8::1]`: that address only, in canonical form. */
  | { kind: 'address'; address: string; port?: number };

export type EntryCheck = { ok: true; entry: AllowEntry } | { ok: false; reason: string };

/** Characters that never belong in a host as written in an allow-list or a proxy request. */
const FORBIDDEN_HOST_CHARS = /[\s/\\?#@%*<>^|'"`{}]/u;

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const MAX_NAME_LENGTH = 253;

/**
 * Canonical form of a host as WHATWG URL parsing gives it for a special scheme, trailing dot
 * dropped; `undefined` when it is not a valid host. IPv6 comes back bracketed.
 */
export function canonicalHost(raw: string): string | undefined {
  let text = raw.trim();
  if (text === '' || FORBIDDEN_HOST_CHARS.test(text)) return undefined;
  // A bare IPv6 address (as `net` reports it) is bracketed so the URL parser sees a host, not a port.
  if (!text.startsWith('[') && text.includes(':')) {
    if (!net.isIPv6(text)) return undefined;
    text = `[${text}]`;
  }
  if (text.startsWith('[') && !text.endsWith(']')) return undefined;
  let hostname: string;
  try {
    const url = new URL(`http://${text}/`);
    // A port, userinfo or path means the text was more than a host.
    if (url.port !== '' || url.username !== '' || url.password !== '' || url.pathname !== '/') return undefined;
    hostname = url.hostname;
  } catch {
    return undefined;
  }
  if (hostname.endsWith('.')) hostname = hostname.slice(0, -1);
  if (hostname === '') return undefined;
  return hostname;
}

/** True for a canonical IPv4 (dotted quad) or bracketed IPv6 host. */
export function isIpHost(host: string): boolean {
  return host.startsWith('[') || net.isIPv4(host);
}

function isValidDomainName(name: string): boolean {
  if (name.length > MAX_NAME_LENGTH) return false;
  const labels = name.split('.');
  if (!labels.every((label) => LABEL.test(label))) return false;
  // An all-numeric last label would make WHATWG read the name as an IPv4 address.
  return !/^[0-9]+$/.test(labels[labels.length - 1] ?? '');
}

/**
 * True when `name` (canonical, no trailing dot) is itself a public suffix: a single label, a
 * listed suffix (ICANN or private section), or a name a wildcard rule makes one. A name the
 * list does not know is judged by its implicit `*` rule: its last label only.
 */
export function isPublicSuffix(name: string): boolean {
  if (!name.includes('.')) return true;
  if (getPublicSuffix(name, { allowPrivateDomains: true }) === name) return true;
  // Blogger's country domains (`blogspot.co.uk`, `blogspot.com.uy`, …) left the list when they
  // began redirecting to blogspot.com, yet each name below one is still a different owner's blog.
  const [first, ...rest] = name.split('.');
  return first === 'blogspot' && rest.length > 0 && isPublicSuffix(rest.join('.'));
}

/** Splits a trailing `:port` off an entry; IPv6 needs brackets to carry one. */
function splitPort(text: string): { body: string; port?: string } {
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close > 0 && text[close + 1] === ':') return { body: text.slice(0, close + 1), port: text.slice(close + 2) };
    return { body: text };
  }
  const colons = text.split(':').length - 1;
  // Two or more colons: a bare IPv6 address, which has no port.
  if (colons !== 1) return { body: text };
  const cut = text.indexOf(':');
  return { body: text.slice(0, cut), port: text.slice(cut + 1) };
}

function parsePort(text: string): number | undefined {
  if (!/^[1-9][0-9]{0,4}$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65_535 ? port : undefined;
}

/** Checks one allow-list entry; the reason says what is wrong in words a user can act on. */
export function checkAllowEntry(entry: unknown): EntryCheck {
  if (typeof entry !== 'string') return { ok: false, reason: 'must be a string' };
  const text = entry.trim();
  if (text === '') return { ok: false, reason: 'must not be empty' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return { ok: false, reason: 'list a host, not a URL' };
  const split = splitPort(text);
  let port: number | undefined;
  if (split.port !== undefined) {
    port = parsePort(split.port);
    if (port === undefined) return { ok: false, reason: 'the port must be a number from 1 to 65535' };
  }
  let body = split.body;
  let wildcard = false;
  if (body.startsWith('*.')) {
    wildcard = true;
    body = body.slice(2);
  }
  if (body.includes('*')) return { ok: false, reason: '"*." is allowed only as the leading label' };
  const host = canonicalHost(body);
  if (host === undefined) return { ok: false, reason: 'is not a valid host name or IP address' };
  const withPort = port === undefined ? {} : { port };
  if (isIpHost(host)) {
    if (wildcard) return { ok: false, reason: 'a wildcard cannot apply to an IP address' };
    return { ok: true, entry: { kind: 'address', address: host, ...withPort } };
  }
  if (!isValidDomainName(host)) return { ok: false, reason: 'is not a valid host name' };
  if (wildcard) {
    if (isPublicSuffix(host)) return { ok: false, reason: `"*.${host}" would allow a whole public suffix` };
    return { ok: true, entry: { kind: 'subtree', base: host, ...withPort } };
  }
  return { ok: true, entry: { kind: 'host', host, ...withPort } };
}

function invalid(entry: unknown, why: string): ExecutionError {
  return new ExecutionError('invalid_specification', `allowedDomains entry ${JSON.stringify(entry)}: ${why}`);
}

/** Parses one allow-list entry; throws `invalid_specification` when it is malformed or too wide. */
export function parseAllowEntry(entry: unknown): AllowEntry {
  const checked = checkAllowEntry(entry);
  if (!checked.ok) throw invalid(entry, checked.reason);
  return checked.entry;
}

/**
 * Validates a specification's allow-list early (before any browser starts) and returns its
 * parsed entries. An empty, non-array or malformed list is `invalid_specification`, never
 * "allow all".
 */
export function validateAllowList(domains: unknown): AllowEntry[] {
  if (!Array.isArray(domains)) {
    throw new ExecutionError('invalid_specification', 'allowedDomains must be an array of host names');
  }
  if (domains.length === 0) {
    throw new ExecutionError('invalid_specification', 'allowedDomains must list at least one host');
  }
  return domains.map((entry) => parseAllowEntry(entry));
}
