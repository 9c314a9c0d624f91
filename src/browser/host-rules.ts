/**
 * `BROWSER_HOST_RULES`: Chromium's `--host-resolver-rules` syntax, for development and tests
 * (fixture sites such as `allowed.test` on 127.0.0.1). Parsed once so that the egress proxy
 * resolves names exactly as Chromium would, and so the launch flag can be rebuilt with our own
 * catch-all appended. The rules never widen the allow-list: they only say where a name lives.
 *
 * Syntax (comma-separated): `MAP <pattern> <target>` where target is `addr`, `addr:port`,
 * `[v6]:port`, a host name, or `~NOTFOUND`; `EXCLUDE <pattern>`. Patterns are globs (`*` any
 * run of characters, `?` one character), as in Chromium's HostMappingRules.
 */
import net from 'node:net';

export type HostRule =
  | { kind: 'map'; pattern: string; target: MapTarget }
  | { kind: 'exclude'; pattern: string };

export type MapTarget =
  | { kind: 'notfound' }
  /** `host` is an IP address (bare, no brackets) or a name to resolve; `port` replaces the URL's. */
  | { kind: 'host'; host: string; port?: number };

export type HostLookup =
  /** No rule applies: resolve the name normally. */
  | { kind: 'none' }
  /** A rule sends the name nowhere. */
  | { kind: 'notfound' }
  | { kind: 'mapped'; host: string; port?: number };

export interface HostRules {
  readonly rules: readonly HostRule[];
  /** How the rules map `host` (canonical, lower-case, no trailing dot). */
  lookup(host: string): HostLookup;
  /** The rules in Chromium's syntax; EXCLUDE rules only when `withExcludes`. */
  format(options?: { withExcludes?: boolean }): string;
}

function parsePort(text: string, rule: string): number {
  const port = Number(text);
  if (!/^[0-9]+$/.test(text) || port < 1 || port > 65535) {
    throw new Error(`BROWSER_HOST_RULES: bad port in "${rule}"`);
  }
  return port;
}

function parseTarget(text: string, rule: string): MapTarget {
  if (text === '~NOTFOUND') return { kind: 'notfound' };
  // `[v6]` or `[v6]:port`
  const bracketed = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(text);
  if (bracketed) {
    const [, host = '', port] = bracketed;
    if (!net.isIPv6(host)) throw new Error(`BROWSER_HOST_RULES: bad IPv6 address in "${rule}"`);
    return port === undefined ? { kind: 'host', host } : { kind: 'host', host, port: parsePort(port, rule) };
  }
  if (net.isIPv6(text)) return { kind: 'host', host: text };
  const hostPort = /^([a-zA-Z0-9._-]+)(?::([0-9]+))?$/.exec(text);
  if (!hostPort) throw new Error(`BROWSER_HOST_RULES: bad target in "${rule}"`);
  const [, host = '', port] = hostPort;
  const lower = host.toLowerCase();
  return port === undefined ? { kind: 'host', host: lower } : { kind: 'host', host: lower, port: parsePort(port, rule) };
}

function parseRule(text: string): HostRule {
  const parts = text.split(/\s+/);
  const verb = parts[0]?.toUpperCase();
  if (verb === 'MAP' && parts.length === 3) {
    return { kind: 'map', pattern: (parts[1] ?? '').toLowerCase(), target: parseTarget(parts[2] ?? '', text) };
  }
  if (verb === 'EXCLUDE' && parts.length === 2) {
    return { kind: 'exclude', pattern: (parts[1] ?? '').toLowerCase() };
  }
  throw new Error(`BROWSER_HOST_RULES: cannot parse "${text}" (expected "MAP pattern target" or "EXCLUDE pattern")`);
}

/** Glob match with `*` and `?`, over the whole string. */
export function globMatch(text: string, pattern: string): boolean {
  // Iterative wildcard matching with backtracking to the last `*`: linear enough for host names.
  let t = 0;
  let p = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === text[t])) {
      t += 1;
      p += 1;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p;
      mark = t;
      p += 1;
    } else if (star !== -1) {
      p = star + 1;
      mark += 1;
      t = mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p += 1;
  return p === pattern.length;
}

function formatTarget(target: MapTarget): string {
  if (target.kind === 'notfound') return '~NOTFOUND';
  const host = net.isIPv6(target.host) ? `[${target.host}]` : target.host;
  return target.port === undefined ? host : `${host}:${target.port}`;
}

export function parseHostRules(text: string | undefined): HostRules {
  const rules = (text ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map(parseRule);

  const lookup = (host: string): HostLookup => {
    const name = host.toLowerCase();
    // As in Chromium: any matching EXCLUDE wins, then the first matching MAP.
    if (rules.some((rule) => rule.kind === 'exclude' && globMatch(name, rule.pattern))) return { kind: 'none' };
    for (const rule of rules) {
      if (rule.kind !== 'map' || !globMatch(name, rule.pattern)) continue;
      if (rule.target.kind === 'notfound') return { kind: 'notfound' };
      return rule.target.port === undefined
        ? { kind: 'mapped', host: rule.target.host }
        : { kind: 'mapped', host: rule.target.host, port: rule.target.port };
    }
    return { kind: 'none' };
  };

  const format = (options?: { withExcludes?: boolean }): string =>
    rules
      .filter((rule) => rule.kind === 'map' || options?.withExcludes === true)
      .map((rule) => (rule.kind === 'map' ? `MAP ${rule.pattern} ${formatTarget(rule.target)}` : `EXCLUDE ${rule.pattern}`))
      .join(',');

  return { rules, lookup, format };
}
