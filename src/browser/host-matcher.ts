/**
 * The one host matcher of the confinement (docs/specification.md#the-allow-list). Every layer —
 * the navigate tool, the request guard, the egress proxy — asks this matcher, so a URL trick
 * that fools one fools none: hosts are compared only after WHATWG parsing (case folding, IDN to punycode, every
 * IPv4 spelling to dotted quad, IPv6 compression), with the trailing dot dropped and userinfo
 * ignored. Wildcards match on label boundaries, never with `endsWith` on raw text.
 */
import net from 'node:net';

import { canonicalHost, isIpHost, validateAllowList, type AllowEntry } from '../contract/allow-list.js';

export type UrlVerdict = { ok: true } | { ok: false; reason: string };

export interface HostMatcher {
  readonly entries: readonly AllowEntry[];
  /** Checks a URL: scheme (http, https, ws, wss only), host and port (the scheme's default when none). */
  allowsUrl(url: string): UrlVerdict;
  /** Checks a bare host (`name`, `1.2.3.4`, `[::1]`, any spelling WHATWG accepts) on some port. */
  allowsHost(host: string): boolean;
  /**
   * True when `address` (canonical IP, v6 without brackets or with) is listed as such, for
   * `port` when the entry names one.
   */
  listsAddress(address: string, port?: number): boolean;
}

/** Schemes a page may reach at all; everything else (file:, chrome:, data:, …) never is. */
const NETWORK_SCHEMES: ReadonlySet<string> = new Set(['http:', 'https:', 'ws:', 'wss:']);

/** Brackets a bare IPv6 address so it compares with canonical hosts. */
function canonicalAddress(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (net.isIPv4(bare)) return canonicalHost(bare);
  if (net.isIPv6(bare)) return canonicalHost(`[${bare}]`);
  return undefined;
}

/** Ports a URL without one means, by scheme. */
const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'ws:': 80, 'https:': 443, 'wss:': 443 };

function entryMatches(entry: AllowEntry, host: string, port: number | undefined): boolean {
  // An entry with a port admits that port only; a check that knows no port (a bare host) is
  // answered by the host alone.
  if (entry.port !== undefined && port !== undefined && entry.port !== port) return false;
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

  const matchesCanonical = (host: string, port?: number): boolean => entries.some((entry) => entryMatches(entry, host, port));

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
    const port = url.port === '' ? DEFAULT_PORTS[url.protocol] : Number(url.port);
    if (!matchesCanonical(host, port)) {
      if (matchesCanonical(host)) return { ok: false, reason: `port ${port ?? '?'} of host "${host}" is not in the allow-list` };
      return { ok: false, reason: `host "${host}" is not in the allow-list` };
    }
    return { ok: true };
  };

  const listsAddress = (address: string, port?: number): boolean => {
    const canonical = canonicalAddress(address);
    return canonical !== undefined && entries.some((e) => e.kind === 'address' && entryMatches(e, canonical, port));
  };

  return { entries, allowsUrl, allowsHost, listsAddress };
}
