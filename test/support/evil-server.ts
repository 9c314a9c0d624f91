/**
 * Loopback servers for the confinement suite: `allowed.test` (serves the fixture pages) and
 * `evil.test` (must never hear anything carrying a case's token). Both log every HTTP request,
 * WebSocket upgrade and (for the UDP listener) every packet they receive, so a test can assert
 * that nothing reached them. They are reached by name through host rules that map the name to
 * 127.0.0.1 and the server's port, so fixture URLs carry no port.
 */
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { browser, finish, type ScriptedTurn } from './scripted-model-server.js';

export interface Hit {
  server: string;
  kind: 'http' | 'websocket' | 'udp';
  method: string;
  /** Request target as received (path and query, or an absolute URL). */
  url: string;
  host: string;
  body: string;
}

export interface RecordingServer {
  readonly name: string;
  readonly port: number;
  readonly hits: readonly Hit[];
  /** Hits whose URL, Host, or body carries `token`. */
  hitsWith(token: string): Hit[];
  /** Resolves with the first hit (past or future) matching `predicate`; rejects at the deadline. */
  waitForHit(predicate: (hit: Hit) => boolean, deadlineMs: number): Promise<Hit>;
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void | Promise<void>;

export const FIXTURES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/confinement');

function carries(hit: Hit, token: string): boolean {
  return hit.url.includes(token) || hit.host.includes(token) || hit.body.includes(token);
}

function recorder(name: string): { hits: Hit[]; record(hit: Hit): void; api: Pick<RecordingServer, 'hitsWith' | 'waitForHit'> } {
  const hits: Hit[] = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const record = (hit: Hit): void => {
    hits.push(hit);
    events.emit('hit', hit);
  };
  const waitForHit = (predicate: (hit: Hit) => boolean, deadlineMs: number): Promise<Hit> =>
    new Promise((resolve, reject) => {
      const found = hits.find(predicate);
      if (found) {
        resolve(found);
        return;
      }
      const onHit = (hit: Hit): void => {
        if (!predicate(hit)) return;
        clearTimeout(timer);
        events.off('hit', onHit);
        resolve(hit);
      };
      const timer = setTimeout(() => {
        events.off('hit', onHit);
        reject(new Error(`${name}: no matching hit within ${deadlineMs} ms; saw ${JSON.stringify(hits.map((h) => h.url))}`));
      }, deadlineMs);
      events.on('hit', onHit);
    });
  return { hits, record, api: { hitsWith: (token) => hits.filter((h) => carries(h, token)), waitForHit } };
}

/** Completes a WebSocket handshake (RFC 6455) so that a leak would look like success to the page. */
function acceptWebSocket(req: http.IncomingMessage, socket: Duplex): void {
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string') {
    socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    return;
  }
  const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  socket.on('error', () => socket.destroy());
}

export async function startRecordingServer(name: string, handler: Handler): Promise<RecordingServer> {
  const { hits, record, api } = recorder(name);
  const sockets = new Set<Duplex>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      record({ server: name, kind: 'http', method: req.method ?? '', url: req.url ?? '', host: req.headers.host ?? '', body });
      Promise.resolve(handler(req, res, body)).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(error));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    record({ server: name, kind: 'websocket', method: req.method ?? '', url: req.url ?? '', host: req.headers.host ?? '', body: '' });
    acceptWebSocket(req, socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    name,
    port,
    hits,
    ...api,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

export interface UdpListener {
  readonly port: number;
  readonly packets: readonly Buffer[];
  waitForPacket(deadlineMs: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** A loopback UDP socket standing in for a STUN server: any packet it receives is a leak. */
export async function startUdpListener(): Promise<UdpListener> {
  const socket = dgram.createSocket('udp4');
  const packets: Buffer[] = [];
  const events = new EventEmitter();
  socket.on('message', (msg) => {
    packets.push(msg);
    events.emit('packet', msg);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  let closing: Promise<void> | undefined;
  return {
    port: socket.address().port,
    packets,
    waitForPacket: (deadlineMs) =>
      new Promise((resolve, reject) => {
        const first = packets[0];
        if (first) {
          resolve(first);
          return;
        }
        const timer = setTimeout(() => reject(new Error(`no UDP packet within ${deadlineMs} ms`)), deadlineMs);
        events.once('packet', (msg: Buffer) => {
          clearTimeout(timer);
          resolve(msg);
        });
      }),
    close: () => {
      closing ??= new Promise<void>((resolve) => socket.close(() => resolve()));
      return closing;
    },
  };
}

/** Values substituted into fixture files (`__NAME__` placeholders). */
export interface FixtureValues {
  token: string;
  evilPort: number;
  udpPort: number;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

function substitute(text: string, values: FixtureValues): string {
  return text
    .replaceAll('__EVIL__', 'http://evil.test')
    .replaceAll('__EVIL_WS__', 'ws://evil.test')
    .replaceAll('__T__', encodeURIComponent(values.token))
    .replaceAll('__EP__', String(values.evilPort))
    .replaceAll('__UDP__', String(values.udpPort))
    .replaceAll('__DONE__', `/done?t=${encodeURIComponent(values.token)}`);
}

/**
 * The `allowed.test` handler: fixture pages (`/case/<name>.html`) and scripts
 * (`/assets/<name>`) with placeholders filled in from the query's token, redirects
 * (`/redirect?status=302&to=…`), a download, and `/done` (the pages' completion signal).
 */
export function allowedSiteHandler(ports: { evilPort: () => number; udpPort: () => number }): Handler {
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://allowed.test');
    const token = url.searchParams.get('t') ?? '';
    const values = { token, evilPort: ports.evilPort(), udpPort: ports.udpPort() };
    const fixture = /^\/(case|assets)\/([a-z0-9-]+\.(?:html|js|css))$/.exec(url.pathname);
    if (fixture) {
      const [, folder = '', file = ''] = fixture;
      const text = await readFile(path.join(FIXTURES_DIR, folder === 'case' ? 'pages' : 'assets', file), 'utf8').catch(() => undefined);
      if (text === undefined) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(substitute(text, values));
      return;
    }
    if (url.pathname === '/redirect') {
      const status = Number(url.searchParams.get('status') ?? '302');
      res.writeHead(status, { location: url.searchParams.get('to') ?? '/', 'cache-control': 'no-store' }).end();
      return;
    }
    if (url.pathname === '/download') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="secret.bin"' });
      res.end(`download ${token}`);
      return;
    }
    if (url.pathname === '/done') {
      res.writeHead(204, { 'access-control-allow-origin': '*' }).end();
      return;
    }
    if (url.pathname === '/bench') {
      const count = Number(url.searchParams.get('n') ?? '100');
      const images = Array.from({ length: count }, (_, i) => `<img src="/pixel?i=${i}&t=${encodeURIComponent(token)}" width="4" height="4">`);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(`<!doctype html><title>bench</title>${images.join('')}`);
      return;
    }
    if (url.pathname === '/pixel') {
      // A 1×1 transparent GIF.
      res.writeHead(200, { 'content-type': 'image/gif', 'cache-control': 'no-store' });
      res.end(Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64'));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  };
}

/** The `evil.test` handler: answers like a real site so that a leak would look like success. */
export const evilSiteHandler: Handler = (req, res) => {
  const url = new URL(req.url ?? '/', 'http://evil.test');
  if (url.pathname.startsWith('/sse')) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'access-control-allow-origin': '*' });
    res.end('data: EVIL-CONTENT\n\n');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'access-control-allow-origin': '*' });
  res.end('<!doctype html><body style="background:#f00"><h1 id="evil">EVIL-CONTENT</h1></body>');
};

/**
 * Hostile pages (docs/security.md#limits), each at its path of `hostileSiteHandler`: the hostile
 * suite (test/faults/hostile-pages.test.ts) and `npm run bench -- hostile` run the same ones.
 */
export const HOSTILE = {
  /** Console lines of 4 MB: 60 of them are 240 MB of console text. */
  floodLines: 60,
  floodLineBytes: 4_000_000,
  /** Popups opened in a loop. */
  stormTabs: 40,
  /**
   * Elements of the giant DOM, each with its text: its page holds about 200 MB once built and up to
   * about 450 MB while its script builds it (200,000 held 900 MB at their peak).
   */
  giantElements: 100_000,
  /** The memory bomb: chunks of 48 MB, half in the script's heap, half array buffers, 1.9 GB in all, then it holds them. */
  bombChunks: 40,
  bombChunkBytes: 48_000_000,
} as const;

const HOSTILE_PAGES: Record<string, string> = {
  flood: `<!doctype html><title>flood</title><p>flood</p><script>
const line = 'x'.repeat(${HOSTILE.floodLineBytes});
let n = 0;
const burst = () => { for (let i = 0; i < 5 && n < ${HOSTILE.floodLines}; i++) console.log(line + (n++)); if (n < ${HOSTILE.floodLines}) setTimeout(burst, 0); else document.title = 'flooded'; };
burst();
</script>`,
  storm: `<!doctype html><title>storm</title><p>storm</p><script>
for (let i = 0; i < ${HOSTILE.stormTabs}; i++) window.open('/child?' + i, '_blank');
</script>`,
  child: `<!doctype html><title>child</title>${'<div>cell</div>'.repeat(2000)}`,
  giant: `<!doctype html><title>giant</title><div id="root"></div><script>
const fragment = document.createDocumentFragment();
for (let i = 0; i < ${HOSTILE.giantElements}; i++) { const cell = document.createElement('div'); cell.textContent = 'cell ' + i; fragment.appendChild(cell); }
document.getElementById('root').appendChild(fragment);
document.title = 'giant';
</script>`,
  // Grows by a chunk a task up to its plateau, far past the suite's ceiling, and holds it: however
  // slow the machine, the page ends up over the ceiling and stays there.
  bomb: `<!doctype html><title>bomb</title><p>bomb</p><script>
const kept = [];
const values = ${HOSTILE.bombChunkBytes / 8};
const grow = () => {
  if (kept.length >= ${HOSTILE.bombChunks}) { document.title = 'bombed'; return; }
  const n = kept.length;
  kept.push(n % 2 === 0 ? new Array(values).fill(n + 0.5) : new Float64Array(values).fill(n));
  setTimeout(grow, 0);
};
grow();
</script>`,
  // Every frame a new picture of random pixels: the worst case for the video's encoder.
  noise: `<!doctype html><title>noise</title><style>body{margin:0}canvas{display:block}</style><canvas></canvas><script>
const canvas = document.querySelector('canvas');
canvas.width = innerWidth; canvas.height = innerHeight;
const ctx = canvas.getContext('2d');
const image = ctx.createImageData(canvas.width, canvas.height);
const pixels = new Uint32Array(image.data.buffer);
const paint = () => { for (let i = 0; i < pixels.length; i++) pixels[i] = (Math.random() * 0xffffffff) | 0xff000000; ctx.putImageData(image, 0, 0); requestAnimationFrame(paint); };
paint();
</script>`,
};

/** Serves HOSTILE's pages by their first path segment (`/flood`, `/storm`, `/giant`, `/bomb`, `/noise`); anything else is a storm's child. */
export const hostileSiteHandler: Handler = (req, res) => {
  const name = new URL(req.url ?? '/', 'http://hostile.test').pathname.slice(1);
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(HOSTILE_PAGES[name] ?? HOSTILE_PAGES.child);
};

const waitThenFinish = (turn: number): ScriptedTurn => (turn === 0 ? browser('wait', { duration: 3 }) : turn === 1 ? browser('list_tabs', {}) : finish('completed', { done: true }));

/** The scripted model's turns for each hostile page, and for `fine`, the well-behaved run on the shop beside it. */
export const HOSTILE_CASES: Record<'flood' | 'storm' | 'giant' | 'bomb' | 'noise' | 'fine', (turn: number) => ScriptedTurn> = {
  flood: waitThenFinish,
  storm: waitThenFinish,
  giant: (turn) => (turn === 0 ? browser('get_page_text', {}) : turn === 1 ? browser('read_page', {}) : finish('completed', { read: true })),
  // Waits until its page is over the ceiling and the run is ended; a run never ended finishes
  // `completed`, which the suite refuses.
  bomb: (turn) => (turn < 60 ? browser('wait', { duration: 5 }) : finish('completed', { survived: true })),
  noise: (turn) => (turn < 2 ? browser('wait', { duration: 5 }) : finish('completed', { watched: true })),
  fine: (turn) => (turn === 0 ? browser('left_click', { target: { type: 'coordinate', x: 250, y: 120 } }) : finish('completed', { fine: true })),
};
