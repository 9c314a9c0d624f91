/**
 * The worker's own fetch of an input file named by an http(s) URL (docs/files-and-codes.md), under the
 * browser's confinement: every hop, redirects included, goes through an egress proxy of the
 * execution's allow-list (egress-proxy.ts), which resolves the name itself and refuses private,
 * loopback and metadata addresses exactly as it does for the page. An input file is therefore
 * never a way to reach what the browser could not (an allowed name pointing at 169.254.169.254
 * is refused here too), and `http://` is accepted where the allow-list accepts it, as for pages.
 */
import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

import type { OpenedFile } from '../domain/input-files.js';
import type { Logger } from '../telemetry/types.js';
import { startEgressProxy, type EgressProxy } from './egress-proxy.js';
import { createHostMatcher } from './host-matcher.js';
import { parseHostRules, type HostRules } from './host-rules.js';
import type { BlockedRequest } from './types.js';

export interface ConfinedFetchOptions {
  /** BROWSER_HOST_RULES: the names the proxy maps, as for the browser. */
  hostRules?: string;
  logger?: Logger;
  /** Certificates trusted besides Node's (tests; operators use NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer;
}

export interface ConfinedFetcher {
  /**
   * Opens `url` (http or https) for reading under `allowedDomains`. Refusals and failures are
   * reasons; `onBlocked` hears each refusal, as the session's would. Call `close()` on the
   * result once read: it ends the connection and the proxy.
   */
  open(url: string, allowedDomains: readonly string[], signal: AbortSignal, onBlocked?: (event: BlockedRequest) => void): Promise<OpenedFile>;
}

/** Redirect hops followed; browsers allow 20, a file URL needs a handful at most. */
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export function createConfinedFetcher(opts: ConfinedFetchOptions): ConfinedFetcher {
  const hostRules: HostRules = parseHostRules(opts.hostRules);

  return {
    async open(raw, allowedDomains, signal, onBlocked) {
      const matcher = createHostMatcher(allowedDomains);
      const first = matcher.allowsUrl(raw);
      if (!first.ok) {
        onBlocked?.({ url: raw, layer: 'proxy', reason: first.reason });
        return { ok: false, reason: `refused: ${first.reason}` };
      }
      let refusal: string | undefined;
      const proxy = await startEgressProxy({
        matcher,
        hostRules,
        logger: opts.logger,
        onBlocked: (event) => {
          refusal ??= event.reason;
          onBlocked?.(event);
        },
      });
      let response: IncomingMessage | undefined;
      try {
        let url = new URL(raw);
        for (let hop = 0; ; hop++) {
          refusal = undefined;
          response = await get(proxy, url, signal, opts.ca);
          const status = response.statusCode ?? 0;
          const location = response.headers.location;
          if (REDIRECTS.has(status) && location) {
            response.destroy();
            if (hop >= MAX_REDIRECTS) return fail(proxy, `more than ${MAX_REDIRECTS} redirects`);
            url = new URL(location, url);
            const verdict = matcher.allowsUrl(url.href);
            if (!verdict.ok) {
              onBlocked?.({ url: url.href, layer: 'proxy', reason: verdict.reason });
              return fail(proxy, `refused: redirected to ${url.protocol}//${url.host}${url.pathname}: ${verdict.reason}`);
            }
            continue;
          }
          if (status < 200 || status > 299) {
            response.destroy();
            return fail(proxy, refusal ? `refused: ${refusal}` : `the server answered HTTP ${status}`);
          }
          const body = response;
          const length = Number(body.headers['content-length']);
          const type = body.headers['content-type'];
          return {
            ok: true,
            body,
            ...(Number.isFinite(length) && body.headers['content-length'] !== undefined ? { contentLength: length } : {}),
            ...(type ? { contentType: type } : {}),
            close: () => {
              body.destroy();
              void proxy.close();
            },
          };
        }
      } catch (error) {
        response?.destroy();
        await proxy.close();
        if (signal.aborted) throw signal.reason;
        return { ok: false, reason: refusal ? `refused: ${refusal}` : `could not be fetched: ${(error as Error).message}` };
      }
    },
  };
}

async function fail(proxy: EgressProxy, reason: string): Promise<OpenedFile> {
  await proxy.close();
  return { ok: false, reason };
}

const HEADERS = { 'user-agent': 'execution-worker (input file)', accept: '*/*' };

/** One GET through the proxy: absolute form for http, a CONNECT tunnel then TLS for https. */
function get(proxy: EgressProxy, url: URL, signal: AbortSignal, ca: string | Buffer | undefined): Promise<IncomingMessage> {
  if (url.protocol === 'http:') {
    return send(http.request({ host: '127.0.0.1', port: proxy.port, method: 'GET', path: url.href, headers: { ...HEADERS, host: url.host }, signal }));
  }
  const port = url.port === '' ? 443 : Number(url.port);
  return new Promise((resolve, reject) => {
    const connect = http.request({ host: '127.0.0.1', port: proxy.port, method: 'CONNECT', path: `${url.hostname}:${port}`, headers: { host: `${url.hostname}:${port}` }, signal });
    connect.once('error', reject);
    connect.once('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`the tunnel was refused (HTTP ${res.statusCode ?? 0})`));
        return;
      }
      const servername = url.hostname.replace(/^\[|\]$/g, '');
      const request = https.request({
        host: url.hostname,
        port,
        method: 'GET',
        path: `${url.pathname}${url.search}`,
        headers: { ...HEADERS, host: url.host },
        signal,
        // The tunnel is the connection: TLS (with certificate checks) runs inside it.
        // SNI carries names only, never an address.
        createConnection: () => tls.connect({ socket, ...(net.isIP(servername) === 0 ? { servername } : {}), ...(ca ? { ca: [...tls.rootCertificates, ca.toString()] } : {}) }),
      });
      send(request).then(resolve, reject);
    });
    connect.end();
  });
}

async function send(request: http.ClientRequest): Promise<IncomingMessage> {
  // `once` rejects on the request's 'error' event.
  const response = once(request, 'response') as Promise<[IncomingMessage]>;
  request.end();
  const [res] = await response;
  return res;
}
