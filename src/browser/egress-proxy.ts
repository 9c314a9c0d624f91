/**
 * The per-execution egress proxy (confinement layer 1). Chromium is given this proxy for the
 * session's context, so every HTTP request, CONNECT tunnel (HTTPS, WebSocket) — from pages,
 * workers, service workers, redirects, beacons — arrives here first. For each one it:
 *   - checks host and port with the session's host matcher (an entry naming a port admits only
 *     that port, so a name mapped to loopback does not open every service there);
 *   - resolves the name itself (BROWSER_HOST_RULES mapping first, then the system resolver);
 *   - refuses loopback, private, link-local and metadata addresses unless the name is mapped by
 *     BROWSER_HOST_RULES or the address is listed in the allow-list;
 *   - connects to the very address it checked (no second lookup, so no DNS rebinding window);
 *   - never falls back to a direct connection: a refusal or failure is an error response.
 * Only node:http and node:net: no proxy library sits between the checks and the socket.
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

import type { BlockedRequest } from './types.js';
import type { Logger } from '../telemetry/types.js';
import type { HostMatcher } from './host-matcher.js';
import type { HostRules } from './host-rules.js';
import { canonicalHost } from '../contract/allow-list.js';
import { embeddedIpv4 } from '../domain/ip-embedding.js';

export interface EgressProxyOptions {
  matcher: HostMatcher;
  hostRules: HostRules;
  onBlocked: (event: BlockedRequest) => void;
  logger?: Logger;
  /** Resolves a name to addresses; the system resolver by default (tests may fake it). */
  resolve?: (host: string) => Promise<string[]>;
  /** Deadline for opening the upstream connection. Default 15 000 ms. */
  connectTimeoutMs?: number;
}

export interface EgressProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and destroys every open connection. Idempotent. */
  close(): Promise<void>;
}

type Resolution = { ok: true; address: string; port: number } | { ok: false; reason: string };

const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;

/** Address ranges a page must never reach through a public name. */
const NON_PUBLIC = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  NON_PUBLIC.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (includes AWS metadata fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some stacks)
  ['ff00::', 8], // multicast
] as const) {
  NON_PUBLIC.addSubnet(prefix, bits, 'ipv6');
}

/** True when `address` is a routable public address (not loopback, private, link-local, …). */
export function isPublicAddress(address: string): boolean {
  if (net.isIPv4(address)) return !NON_PUBLIC.check(address, 'ipv4');
  if (!net.isIPv6(address)) return false;
  const v4 = embeddedIpv4(address);
  if (v4 !== undefined) return isPublicAddress(v4);
  return !NON_PUBLIC.check(address, 'ipv6');
}

async function systemResolve(host: string): Promise<string[]> {
  const records = await dns.promises.lookup(host, { all: true, verbatim: true });
  return records.map((r) => r.address);
}

/** Splits `host:port` / `[v6]:port` of a CONNECT line. */
function splitAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):([0-9]{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: match[1] ?? '', port };
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const { matcher, hostRules, onBlocked, logger } = options;
  const resolve = options.resolve ?? systemResolve;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const sockets = new Set<Duplex>();
  let ownPort = 0;
  // Upstream keep-alive for plain HTTP: pools are keyed by the checked address and port, so a
  // reused socket always leads where a fresh check would have connected.
  const upstreamAgent = new http.Agent({ keepAlive: true, maxSockets: 32 });

  const track = (socket: Duplex): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  const refuse = (url: string, reason: string): Resolution => {
    onBlocked({ url, layer: 'proxy', reason });
    return { ok: false, reason };
  };

  /** The allow-list check, then where to connect; every refusal is reported once. */
  async function checkAndResolve(url: string, rawHost: string, port: number): Promise<Resolution> {
    const target = await decide(url, rawHost, port);
    // However it was reached (listed address, host rule), the proxy never tunnels into itself.
    if (target.ok && target.port === ownPort && !isPublicAddress(target.address)) {
      return refuse(url, 'the proxy does not connect to itself');
    }
    return target;
  }

  async function decide(url: string, rawHost: string, port: number): Promise<Resolution> {
    const verdict = matcher.allowsUrl(url);
    if (!verdict.ok) return refuse(url, verdict.reason);
    const host = canonicalHost(rawHost);
    if (host === undefined) return refuse(url, 'malformed host');
    if (host.startsWith('[') || net.isIPv4(host)) {
      // An IP literal passed the matcher only because it is listed: that listing is the permission.
      const address = host.startsWith('[') ? host.slice(1, -1) : host;
      return { ok: true, address, port };
    }
    const mapping = hostRules.lookup(host);
    if (mapping.kind === 'notfound') return refuse(url, `host "${host}" does not resolve (host rules)`);
    if (mapping.kind === 'mapped') {
      // Mapped by BROWSER_HOST_RULES (development and tests): the operator chose the address.
      const targetPort = mapping.port ?? port;
      if (net.isIP(mapping.host) !== 0) return { ok: true, address: mapping.host, port: targetPort };
      const addresses = await resolve(mapping.host).catch(() => []);
      const first = addresses[0];
      if (first === undefined) return refuse(url, `host "${host}" does not resolve`);
      return { ok: true, address: first, port: targetPort };
    }
    let addresses: string[];
    try {
      addresses = await resolve(host);
    } catch {
      return refuse(url, `host "${host}" does not resolve`);
    }
    const usable = addresses.find((address) => isPublicAddress(address) || matcher.listsAddress(address, port));
    if (usable === undefined) {
      const shown = addresses.length > 0 ? addresses.join(', ') : 'nothing';
      return refuse(url, `host "${host}" resolves to a non-public address (${shown})`);
    }
    return { ok: true, address: usable, port };
  }

  /**
   * The checked connection a tunnel needs, or undefined once the client has been answered
   * 403 (refused) or 502 (unreachable).
   */
  async function openUpstream(client: Duplex, url: string, host: string, port: number): Promise<net.Socket | undefined> {
    const target = await checkAndResolve(url, host, port);
    if (!target.ok) {
      client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
      return undefined;
    }
    try {
      return await connectUpstream(target);
    } catch (error) {
      logger?.debug({ url, err: (error as Error).message }, 'egress proxy connect failed');
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
      return undefined;
    }
  }

  /** Joins the two sockets both ways; either side closing closes the other. */
  function splice(client: Duplex, upstream: net.Socket, head: Buffer): void {
    if (head.length > 0) upstream.write(head);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.pipe(client);
    client.pipe(upstream);
  }

  function connectUpstream(target: { address: string; port: number }): Promise<net.Socket> {
    return new Promise((resolvePromise, reject) => {
      const upstream = net.connect({ host: target.address, port: target.port });
      track(upstream);
      const timer = setTimeout(() => upstream.destroy(new Error(`connect timed out after ${connectTimeoutMs} ms`)), connectTimeoutMs);
      upstream.once('connect', () => {
        clearTimeout(timer);
        upstream.removeListener('error', reject);
        resolvePromise(upstream);
      });
      upstream.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  }

  const server = http.createServer();
  server.on('connection', (socket: net.Socket) => track(socket));

  // Plain HTTP in absolute form (`GET http://host/path`).
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    void (async () => {
      const raw = req.url ?? '';
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        refuse(raw, 'not a proxy request');
        res.writeHead(400, { 'content-type': 'text/plain' }).end('confinement proxy: absolute URL expected\n');
        return;
      }
      if (url.protocol !== 'http:') {
        refuse(raw, `the "${url.protocol}" scheme is not proxied`);
        res.writeHead(403, { 'content-type': 'text/plain' }).end('confinement proxy: refused\n');
        return;
      }
      const port = url.port === '' ? 80 : Number(url.port);
      const target = await checkAndResolve(url.href, url.hostname, port);
      if (!target.ok) {
        res.writeHead(403, { 'content-type': 'text/plain' }).end(`confinement proxy: refused (${target.reason})\n`);
        return;
      }
      const headers = { ...req.headers };
      // Hop-by-hop headers of the browser–proxy leg must not travel upstream.
      for (const name of ['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']) delete headers[name];
      // RFC 9112 §3.2.2: the request-target's authority replaces whatever Host was received.
      headers.host = url.host;
      const upstream = http.request({
        host: target.address,
        port: target.port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        agent: upstreamAgent,
        timeout: connectTimeoutMs,
      });
      upstream.on('response', (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, upRes.rawHeaders);
        // Headers on as they come, not with the first body bytes: a stream or a late body must
        // not hold back the answer the page is waiting for.
        res.flushHeaders();
        upRes.pipe(res);
      });
      upstream.on('timeout', () => upstream.destroy(new Error('upstream timed out')));
      upstream.on('error', (error) => {
        logger?.debug({ url: url.href, err: error.message }, 'egress proxy upstream error');
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('confinement proxy: upstream failed\n');
        else res.destroy();
      });
      // The browser gave up on the request (a stopped load, a cancelled fetch, a closed page):
      // the site's connection is closed too, not left open until its idle timeout.
      res.on('close', () => {
        if (!res.writableFinished) upstream.destroy();
      });
      req.pipe(upstream);
    })();
  });

  // Tunnels: HTTPS, and WebSockets (Chromium tunnels ws:// through CONNECT as well).
  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    client.on('error', () => client.destroy());
    void (async () => {
      const authority = splitAuthority(req.url ?? '');
      if (authority === undefined) {
        refuse(`connect://${req.url ?? ''}`, 'malformed CONNECT target');
        client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
        return;
      }
      // The scheme is unknown inside a tunnel; https stands for "network scheme" in the check.
      const url = `https://${authority.host}:${authority.port}/`;
      const upstream = await openUpstream(client, url, authority.host, authority.port);
      if (!upstream) return;
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      splice(client, upstream, head);
    })();
  });

  // An `Upgrade` in absolute form (a ws:// request sent without CONNECT): same checks, then a tunnel.
  server.on('upgrade', (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    client.on('error', () => client.destroy());
    void (async () => {
      let url: URL;
      try {
        url = new URL(req.url ?? '');
      } catch {
        refuse(req.url ?? '', 'not a proxy request');
        client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
        return;
      }
      const port = url.port === '' ? 80 : Number(url.port);
      const upstream = await openUpstream(client, url.href, url.hostname, port);
      if (!upstream) return;
      const lines = [`${req.method ?? 'GET'} ${url.pathname}${url.search} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i] ?? '';
        if (/^proxy-/i.test(name)) continue;
        lines.push(`${name}: ${req.rawHeaders[i + 1] ?? ''}`);
      }
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      splice(client, upstream, head);
    })();
  });

  server.on('clientError', (_error, socket: Duplex) => socket.destroy());

  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    // Loopback only: the proxy is for this worker's browser, not for the network.
    server.listen(0, '127.0.0.1', () => {
      server.removeListener('error', reject);
      resolvePromise();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('egress proxy: no TCP address');
  ownPort = address.port;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolvePromise) => {
      server.close(() => resolvePromise());
      upstreamAgent.destroy();
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    });
    return closing;
  };

  return { url: `http://127.0.0.1:${ownPort}`, port: ownPort, close };
}
