import net from 'node:net';
import type { FastifyRequest } from 'fastify';
import { parseAuthority, type PublicHost } from '../domain/public-hosts.js';
import { HttpError } from './http-errors.js';

/**
 * DNS rebinding (docs/security.md#dns-rebinding): a page on `evil.test` can make its own name
 * resolve to 127.0.0.1, and the browser then sends it, with the page's scripts reading every
 * answer, to this service; the only trace is the `Host` header, which names `evil.test`. So a
 * request is answered only when its `Host` (and the authority of an absolute-form target) names
 * the address the request arrived on, or a loopback name when it arrived on loopback, or a host
 * listed in `PUBLIC_HOSTS`. Anything else answers 421 Misdirected Request: the request reached a
 * server that does not serve that name, which no credential changes.
 *
 * An IP literal cannot be rebound (nothing is resolved), so the address itself is always safe to
 * accept; a name is accepted only when the operator listed it.
 */

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** `::ffff:127.0.0.1` → `127.0.0.1`; an IPv6 address in brackets, as a Host writes it. */
function addressAsHost(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return mapped;
  return net.isIPv6(address) ? (new URL(`http://[${address}]`).hostname) : address;
}

function isLoopback(address: string): boolean {
  return /^127\./.test(address) || address === '[::1]';
}

/**
 * Whether `authority` names this service, for a request that arrived on `localAddress` at
 * `port`.
 */
export function isServedHost(authority: string | undefined, localAddress: string | undefined, port: number, publicHosts: readonly PublicHost[]): boolean {
  if (authority === undefined || localAddress === undefined) return false;
  const parsed = parseAuthority(authority);
  if (!parsed) return false;
  const local = addressAsHost(localAddress);
  if (parsed.port === port && (parsed.hostname === local || (isLoopback(local) && LOOPBACK_NAMES.has(parsed.hostname)))) return true;
  return publicHosts.some((h) => h.hostname === parsed.hostname && (h.port === undefined || h.port === parsed.port));
}

/**
 * The `onRequest` hook refusing a request for another host (421). `port` is the listening port;
 * `localAddress`, for a server reached without a socket (server.ts, `listen: false`), the address
 * its requests are taken to arrive on (default: the socket's).
 */
export function hostGuard(port: () => number, publicHosts: readonly PublicHost[], localAddress: (request: FastifyRequest) => string | undefined = (request) => request.raw.socket?.localAddress) {
  return async (request: FastifyRequest): Promise<void> => {
    const raw = request.raw;
    const host = headerValue(raw.headers.host);
    const target = raw.url ?? '';
    // An absolute-form target (`GET http://name/path`) names its host too; both must be ours.
    const absolute = /^[a-z][a-z0-9+.-]*:\/\//i.test(target) ? /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(target)?.[1] : undefined;
    const local = localAddress(request);
    const ok = isServedHost(host, local, port(), publicHosts) && (absolute === undefined || isServedHost(absolute, local, port(), publicHosts));
    if (!ok) {
      const named = (absolute ?? host ?? '').slice(0, 200);
      throw new HttpError(421, [{ loc: ['header', 'Host'], msg: `this service does not answer for "${named}": add the name to PUBLIC_HOSTS to serve it`, type: 'misdirected_request' }]);
    }
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
