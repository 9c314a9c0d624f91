import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

/** A request the server saw (every one, served or not). */
export interface SeenRequest {
  method: string;
  path: string;
  host: string;
}

export interface StaticServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export interface StaticServerOptions {
  /** Folder served at `/`; `/` itself serves index.html. */
  root: string;
  /** Handles a request before the files do; return true when it answered. */
  handle?: (req: IncomingMessage, res: ServerResponse, body: Buffer) => boolean | Promise<boolean>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Serves a fixture folder on 127.0.0.1 (port 0: a free one) and records every request. */
export async function startStaticServer(options: StaticServerOptions): Promise<StaticServer> {
  const requests: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      requests.push({ method: req.method ?? 'GET', path, host: req.headers.host ?? '' });
      void respond(req, res, path, Buffer.concat(chunks)).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  });

  async function respond(req: IncomingMessage, res: ServerResponse, path: string, body: Buffer): Promise<void> {
    if (options.handle && (await options.handle(req, res, body))) return;
    const relative = normalize(decodeURIComponent(path === '/' ? '/index.html' : path)).replace(/^([/\\])+/, '');
    if (relative.split(sep).includes('..')) {
      res.writeHead(403).end();
      return;
    }
    try {
      const content = await readFile(join(options.root, relative));
      res.writeHead(200, { 'content-type': TYPES[extname(relative)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(content);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections from the browser would hold close() open.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
