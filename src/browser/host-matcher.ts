/**
 * The one host matcher of the confinement (issue 4, contract §3). Every layer — the navigate
 * tool, the request guard, the egress proxy — asks this matcher, so a URL trick that fools one
 * fools none: hosts are compared only after WHATWG parsing (case folding, IDN to punycode, every
 * IPv4 spelling to dotted quad, IPv6 compression), with the trailing dot dropped and userinfo
 * ignored. Wildcards match on label boundaries, never with `endsWith` on raw text.
 */
import net from 'node:net';

import { ExecutionError } from '../domain/errors.js';
import { isPublicSuffix } from './public-suffix.js';

export type UrlVerdict = { ok: true } | { ok: false; reason: string };

/** One parsed allow-list entry. */
export type AllowEntry =
  /** `example.com`: that host only. */
  | { kind: 'host'; host: string }
  /** `*.example.com`: example.com and every name below it. */
  | { kind: 'subtree'; base: string }
  /** `192.0.2.7`, `[2001:db8::1]`: that address only, in canonical form. */
  | { kind: 'address'; address: string };

export interface HostMatcher {
  readonly entries: readonly AllowEntry[];
  /** Checks a URL: scheme (http, https, ws, wss only) and host. */
  allowsUrl(url: string): UrlVerdict;
  /** Checks a bare host (`name`, `1.2.3.4`, `[::1]`, any spelling WHATWG accepts). */
  allowsHost(host: string): boolean;
  /** True when `address` (canonical IP, v6 without brackets or with) is listed as such. */
  listsAddress(address: string): boolean;
}

/** Schemes a page may reach at all; everything else (file:, chrome:, data:, …) never is. */
const NETWORK_SCHEMES: ReadonlySet<string> = new Set(['http:', 'https:', 'ws:', 'wss:']);

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

/** Brackets a bare IPv6 address so it compares with canonical hosts. */
function canonicalAddress(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (net.isIPv4(bare)) return canonicalHost(bare);
  if (net.isIPv6(bare)) return canonicalHost(`[${bare}]`);
  return undefined;
}

function isValidDomainName(name: string): boolean {
  if (name.length > MAX_NAME_LENGTH) return false;
  const labels = name.split('.');
  if (!labels.every((label) => LABEL.test(label))) return false;
  // An all-numeric last label would make WHATWG read the name as an IPv4 address.
  return !/^[0-9]+$/.test(labels[labels.length - 1] ?? '');
}

function invalid(entry: unknown, why: string): ExecutionError {
  return new ExecutionError('invalid_specification', `allowedDomains entry ${JSON.stringify(entry)}: ${why}`);
}

/** Parses one allow-list entry; throws `invalid_specification` when it is malformed or too wide. */
export function parseAllowEntry(entry: unknown): AllowEntry {
  if (typeof entry !== 'string') throw invalid(entry, 'must be a string');
  const text = entry.trim();
  if (text === '') throw invalid(entry, 'must not be empty');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw invalid(entry, 'list a host, not a URL');
  let wildcard = false;
  let body = text;
  if (body.startsWith('*.')) {
    wildcard = true;
    body = body.slice(2);
  }
  if (body.includes('*')) throw invalid(entry, '"*." is allowed only as the leading label');
  const host = canonicalHost(body);
  if (host === undefined) throw invalid(entry, 'is not a valid host name or IP address');
  if (isIpHost(host)) {
    if (wildcard) throw invalid(entry, 'a wildcard cannot apply to an IP address');
    return { kind: 'address', address: host };
  }
  if (!isValidDomainName(host)) throw invalid(entry, 'is not a valid host name');
  if (wildcard) {
    if (isPublicSuffix(host)) throw invalid(entry, `"*.${host}" would allow a whole public suffix`);
    return { kind: 'subtree', base: host };
  }
  return { kind: 'host', host };
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

function entryMatches(entry: AllowEntry, host: string): boolean {
  switch (entry.kind) {
    case 'host':
      return host === entry.host;
    case 'address':
      return host === entry.address;
    case 'subtree': {
      if (isIpHost(host)) return false;
      // Label by label from the right: `evilexample.com` shares no label boundary with `example.com`.
      const baseLabels = entry.base.split('.');
      const hostLabels = host.split('.');
      if (hostLabels.length < baseLabels.length) return false;
      const offset = hostLabels.length - baseLabels.length;
      return baseLabels.every((label, i) => hostLabels[offset + i] === label);
    }
  }
}

export function createHostMatcher(allowedDomains: readonly string[]): HostMatcher {
  const entries = validateAllowList(allowedDomains);

  const matchesCanonical = (host: string): boolean => entries.some((entry) => entryMatches(entry, host));

  const allowsHost = (host: string): boolean => {
    const canonical = canonicalHost(host);
    return canonical !== undefined && matchesCanonical(canonical);
  };

  const allowsUrl = (raw: string): UrlVerdict => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, reason: 'not a valid absolute URL' };
    }
    if (!NETWORK_SCHEMES.has(url.protocol)) {
      return { ok: false, reason: `the "${url.protocol}" scheme is never reachable` };
    }
    let host = url.hostname;
    if (host.endsWith('.')) host = host.slice(0, -1);
    if (host === '') return { ok: false, reason: 'the URL has no host' };
    if (!matchesCanonical(host)) {
      return { ok: false, reason: `host "${host}" is not in the allow-list` };
    }
    return { ok: true };
  };

  const listsAddress = (address: string): boolean => {
    const canonical = canonicalAddress(address);
    return canonical !== undefined && entries.some((e) => e.kind === 'address' && e.address === canonical);
  };

  return { entries, allowsUrl, allowsHost, listsAddress };
}
