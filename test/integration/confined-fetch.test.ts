import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfinedFetcher } from '../../src/browser/confined-fetch.js';
import type { BlockedRequest } from '../../src/browser/types.js';
import type { OpenedFile } from '../../src/domain/input-files.js';
import { tempDir } from '../support/env.js';

/**
 * The worker's own fetch of an https input file: a CONNECT tunnel through the egress proxy of
 * the allow-list, TLS with certificate checks inside it, every redirect hop checked. The site is
 * a local https server with a certificate made for the test (openssl), trusted only when the
 * fetcher is told to.
 */

let dir: string;
let server: https.Server;
let cert: Buffer;
let hostRules: string;
const hits: string[] = [];

beforeAll(async () => {
  dir = await tempDir('confined-fetch');
  const key = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  await promisify(execFile)('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', certFile, '-days', '1', '-subj', '/CN=secure.test', '-addext', 'subjectAltName=DNS:secure.test']);
  cert = await readFile(certFile);
  server = https.createServer({ key: await readFile(key), cert }, (req, res) => {
    hits.push(`${req.headers.host ?? ''}${req.url ?? ''}`);
    if (req.url === '/report.csv') res.writeHead(200, { 'content-type': 'text/csv', 'content-length': '6' }).end('a,b\n1\n');
    else if (req.url === '/moved') res.writeHead(302, { location: '/report.csv' }).end();
    else if (req.url === '/away') res.writeHead(302, { location: 'https://evil.test/x.csv' }).end();
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  hostRules = `MAP secure.test 127.0.0.1:${port},MAP evil.test 127.0.0.1:${port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function body(opened: OpenedFile): Promise<string> {
  if (!opened.ok) throw new Error(opened.reason);
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of opened.body) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks).toString();
  } finally {
    opened.close();
  }
}

const signal = () => new AbortController().signal;

describe('confined fetch of https input files', () => {
  it('fetches through the tunnel, following an allowed redirect', async () => {
    const fetcher = createConfinedFetcher({ hostRules, ca: cert });
    const opened = await fetcher.open('https://secure.test/moved', ['secure.test'], signal());
    expect(opened).toMatchObject({ ok: true, contentLength: 6, contentType: 'text/csv' });
    expect(await body(opened)).toBe('a,b\n1\n');
    expect(hits.slice(-2)).toEqual(['secure.test/moved', 'secure.test/report.csv']);
  });

  it('checks the certificate inside the tunnel', async () => {
    const opened = await createConfinedFetcher({ hostRules }).open('https://secure.test/report.csv', ['secure.test'], signal());
    expect(opened).toEqual({ ok: false, reason: expect.stringMatching(/^could not be fetched: self[- ]signed certificate/) });
  });

  it('refuses a redirect out of the allow-list before following it', async () => {
    const blocked: BlockedRequest[] = [];
    const before = hits.length;
    const opened = await createConfinedFetcher({ hostRules, ca: cert }).open('https://secure.test/away', ['secure.test'], signal(), (e) => blocked.push(e));
    expect(opened).toEqual({ ok: false, reason: 'refused: redirected to https://evil.test/x.csv: host "evil.test" is not in the allow-list' });
    expect(blocked).toEqual([{ url: 'https://evil.test/x.csv', layer: 'proxy', reason: 'host "evil.test" is not in the allow-list' }]);
    expect(hits.slice(before)).toEqual(['secure.test/away']);
  });

  it('lets the proxy refuse what the allow-list permits but the address does not', async () => {
    const blocked: BlockedRequest[] = [];
    // `localhost` is listed, but it is no public address and no host rule maps it.
    const opened = await createConfinedFetcher({ hostRules }).open('https://localhost/x.csv', ['localhost'], signal(), (e) => blocked.push(e));
    expect(opened).toEqual({ ok: false, reason: expect.stringMatching(/^refused: host "localhost" resolves to a non-public address/) });
    expect(blocked.map((e) => e.layer)).toEqual(['proxy']);
  });

  it('stops when its signal aborts', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    await expect(createConfinedFetcher({ hostRules, ca: cert }).open('https://secure.test/report.csv', ['secure.test'], controller.signal)).rejects.toThrow('shutting down');
  });
});
