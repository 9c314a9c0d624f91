/**
 * Host names as `execution-worker serve` is told to answer for them (PUBLIC_HOSTS) and as requests
 * name them (`Host`): read the way WHATWG URL reads an authority, so that the configuration and
 * the guard that checks each request (local-service/host-guard.ts) agree on every spelling.
 */

/** A name from PUBLIC_HOSTS, and the port it is for (undefined: any). */
export interface PublicHost {
  hostname: string;
  port: number | undefined;
}

/**
 * An authority (`name`, `name:port`, `[v6]:port`) as WHATWG URL reads it: hostname lower-cased
 * and IP literals in canonical form (`[0:0::1]` → `[::1]`), port as a number (80 when absent).
 * Undefined when it is not a bare authority (user info, a path, spaces).
 */
export function parseAuthority(authority: string): { hostname: string; port: number } | undefined {
  if (authority === '' || /[\s@/?#\\]/.test(authority)) return undefined;
  try {
    const url = new URL(`http://${authority}`);
    return { hostname: url.hostname, port: url.port === '' ? 80 : Number(url.port) };
  } catch {
    return undefined;
  }
}

/** One PUBLIC_HOSTS entry (`name` or `name:port`); undefined when it is not a host. */
export function parsePublicHost(entry: string): PublicHost | undefined {
  const parsed = parseAuthority(entry);
  if (!parsed) return undefined;
  return { hostname: parsed.hostname, port: /:\d+$/.test(entry) ? parsed.port : undefined };
}

/** PUBLIC_HOSTS' entries, comma-separated, blanks skipped. */
export function publicHostEntries(value: string | undefined): string[] {
  return (value ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
}

/** PUBLIC_HOSTS' entries; throws on one that is not a host. */
export function parsePublicHosts(value: string | undefined): PublicHost[] {
  return publicHostEntries(value).map((entry) => {
    const host = parsePublicHost(entry);
    if (!host) throw new Error(`PUBLIC_HOSTS: "${entry}" is not a host name or a host:port`);
    return host;
  });
}
