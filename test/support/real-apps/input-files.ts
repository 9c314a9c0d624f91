import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Input files for the worker to fetch (docs/files-and-codes.md#input-files), served over HTTP on
 * loopback under a host name of the workflow's allow-list (`files.test`, mapped to the server's
 * port by `hostRules`).
 */
export interface InputFiles {
  host: string;
  hostRules: string;
  /** The URL an input gives for a file: `http://files.test/{name}`. */
  url(name: string): string;
  /** Names fetched so far, in order. */
  fetched: string[];
  close(): Promise<void>;
}

export async function startInputFiles(files: Record<string, { body: Buffer | string; type: string }>, host = 'files.test'): Promise<InputFiles> {
  const fetched: string[] = [];
  const server = http.createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
    const file = Object.hasOwn(files, name) ? files[name] : undefined;
    if (req.method !== 'GET' || !file) {
      res.writeHead(404).end();
      return;
    }
    fetched.push(name);
    const body = Buffer.from(file.body);
    res.writeHead(200, { 'content-type': file.type, 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host,
    hostRules: `MAP ${host} 127.0.0.1:${port}`,
    url: (name) => `http://${host}/${encodeURIComponent(name)}`,
    fetched,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
