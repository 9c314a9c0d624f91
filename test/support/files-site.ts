import { createHash, createHmac } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { startRecordingServer, type RecordingServer } from './evil-server.js';
import { startStaticServer, type StaticServer } from './static-server.js';

/**
 * The files fixture (docs/files-and-codes.md): `files.test` serves downloads (a CSV, a PDF behind a
 * redirect, a link to `evil.test`, files too large, one that never ends), an upload form whose
 * server hashes what it receives, and a sign-in that checks a TOTP code with its own RFC 6238
 * code (deliberately not the worker's). `evil.test` answers everything with an attachment, so
 * a download that reached it would look like success. Both are reached by name through
 * `hostRules`, which carry their ports.
 */

export const CSV = 'order,amount\nA-1001,10.00\nA-1002,12.50\n';
/** A small PDF with bytes above 0x7f, so that any text re-encoding on the way would show. */
export const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n%'), Buffer.from([0xe2, 0xe3, 0xcf, 0xd3]), Buffer.from('\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')]);
export const NOTES = 'remember the milk\n';
/** The sign-in's seed: 20 bytes, `12345678901234567890` (RFC 6238's SHA-1 seed), in base32. */
export const TOTP_SEED = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
export const TOTP_USER = 'alice';

export interface ReceivedUpload {
  field: string;
  filename: string;
  bytes: number;
  sha256: string;
}

export interface LoginAttempt {
  user: string;
  code: string;
  accepted: boolean;
}

export interface FilesSite {
  /** BROWSER_HOST_RULES mapping files.test and evil.test to the two servers. */
  hostRules: string;
  site: StaticServer;
  evil: RecordingServer;
  uploads: ReceivedUpload[];
  logins: LoginAttempt[];
  /** Bytes the endless big.bin stream has sent, by request URL (`/files/big.bin?from=popup`). */
  streamed: Map<string, number>;
  /** Resolves with the next upload or login (past ones do not count); rejects after `deadlineMs`. */
  next<K extends 'upload' | 'login'>(kind: K, deadlineMs?: number): Promise<K extends 'upload' ? ReceivedUpload[] : LoginAttempt>;
  close(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../fixtures/sites/files/', import.meta.url));
const CHUNK = Buffer.alloc(64 * 1024, 0x61);

export async function startFilesSite(): Promise<FilesSite> {
  const uploads: ReceivedUpload[] = [];
  const logins: LoginAttempt[] = [];
  const streamed = new Map<string, number>();
  const events = new EventEmitter();
  const evil = await startRecordingServer('evil.test', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pdf', 'content-disposition': 'attachment; filename="stolen.pdf"' });
    res.end('EVIL-CONTENT');
  });
  const site = await startStaticServer({
    root: ROOT,
    handle: (req, res, body) => {
      const url = new URL(req.url ?? '/', 'http://files.test');
      const attachment = (type: string, name: string) => ({ 'content-type': type, 'content-disposition': `attachment; filename="${name}"`, 'cache-control': 'no-store' });
      switch (url.pathname) {
        case '/files/orders.csv':
          res.writeHead(200, attachment('text/csv; charset=utf-8', 'orders.csv')).end(CSV);
          return true;
        case '/go/report':
          res.writeHead(302, { location: '/files/report.pdf' }).end();
          return true;
        case '/files/report.pdf':
          res.writeHead(200, attachment('application/pdf', 'report.pdf')).end(PDF);
          return true;
        case '/files/notes.txt':
          res.writeHead(200, { 'content-type': 'text/plain' }).end(NOTES);
          return true;
        case '/go/evil':
          res.writeHead(302, { location: 'http://evil.test/files/stolen.pdf' }).end();
          return true;
        case '/files/big.bin':
          // As fast as the browser takes it, without end: only a cancel can stop it.
          res.writeHead(200, attachment('application/octet-stream', 'big.bin'));
          stream(res, Infinity, (bytes) => streamed.set(req.url ?? '', (streamed.get(req.url ?? '') ?? 0) + bytes));
          return true;
        case '/files/declared.bin':
          // Announces more than the limit, then trickles: only the announced length gives it away.
          res.writeHead(200, { ...attachment('application/octet-stream', 'declared.bin'), 'content-length': String(Number(url.searchParams.get('bytes') ?? 0)) });
          trickle(res);
          return true;
        case '/files/endless.bin':
          // A trickle that never ends: the download is still running when the run does.
          res.writeHead(200, attachment('application/octet-stream', 'endless.bin'));
          trickle(res);
          return true;
        case '/upload': {
          const received = parseMultipart(req, body);
          uploads.push(...received);
          events.emit('upload', received);
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end(`<!doctype html><title>Received</title>${received.map((u) => `<p>${u.field}: ${u.filename} ${u.bytes} bytes sha256 ${u.sha256}</p>`).join('')}`);
          return true;
        }
        case '/login': {
          const form = new URLSearchParams(body.toString('utf8'));
          const attempt = { user: form.get('user') ?? '', code: form.get('code') ?? '', accepted: false };
          attempt.accepted = attempt.user === TOTP_USER && acceptedCodes(Date.now()).includes(attempt.code);
          logins.push(attempt);
          events.emit('login', attempt);
          res.writeHead(attempt.accepted ? 200 : 401, { 'content-type': 'text/html; charset=utf-8' });
          // The page echoes the code, as some do: it must not reach logs or model text.
          res.end(`<!doctype html><title>${attempt.accepted ? 'Welcome' : 'Denied'}</title><p id="result">${attempt.accepted ? `Welcome ${TOTP_USER}` : 'Wrong code'}; code ${attempt.code}</p>`);
          return true;
        }
        default:
          return false;
      }
    },
  });
  const hostRules = `MAP files.test 127.0.0.1:${site.port},MAP evil.test 127.0.0.1:${evil.port}`;
  return {
    hostRules,
    site,
    evil,
    uploads,
    logins,
    streamed,
    next(kind, deadlineMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          events.off(kind, onEvent);
          reject(new Error(`files site: no ${kind} within ${deadlineMs} ms`));
        }, deadlineMs);
        const onEvent = (value: unknown) => {
          clearTimeout(timer);
          resolve(value as never);
        };
        events.once(kind, onEvent);
      });
    },
    async close() {
      await Promise.all([site.close(), evil.close()]);
    },
  };
}

/** Writes `total` bytes (Infinity: no end) as the client takes them; stops if the client goes away. */
function stream(res: ServerResponse, total: number, onSent: (bytes: number) => void = () => undefined): void {
  let left = total;
  const write = () => {
    while (left > 0 && !res.destroyed) {
      const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, left));
      left -= chunk.length;
      onSent(chunk.length);
      if (!res.write(chunk)) return void res.once('drain', write);
    }
    if (!res.destroyed) res.end();
  };
  write();
}

function trickle(res: ServerResponse): void {
  const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(CHUNK.subarray(0, 1024))), 100);
  res.once('close', () => clearInterval(timer));
}

/** The file parts of a multipart/form-data body (RFC 7578), each hashed. */
function parseMultipart(req: IncomingMessage, body: Buffer): ReceivedUpload[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(req.headers['content-type'] ?? '');
  if (!boundary) return [];
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts: ReceivedUpload[] = [];
  let start = body.indexOf(delimiter);
  while (start >= 0) {
    const next = body.indexOf(delimiter, start + delimiter.length);
    if (next < 0) break;
    // Between the delimiter's CRLF and the CRLF before the next delimiter.
    const part = body.subarray(start + delimiter.length + 2, next - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const disposition = /name="([^"]*)"(?:; filename="([^"]*)")?/.exec(headers);
    if (disposition?.[2] !== undefined) {
      const data = part.subarray(headerEnd + 4);
      parts.push({ field: disposition[1] ?? '', filename: disposition[2], bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') });
    }
    start = next;
  }
  return parts;
}

/**
 * The site's own RFC 6238 check (SHA-1, 6 digits, 30 s), written apart from the worker's code:
 * the codes of the current step and the steps either side, as servers allow for clock skew.
 */
export function acceptedCodes(nowMs: number): string[] {
  let bits = '';
  for (const char of TOTP_SEED) bits += 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(char).toString(2).padStart(5, '0');
  const key = Buffer.from((bits.match(/.{8}/g) ?? []).map((byte) => parseInt(byte, 2)));
  const step = Math.floor(nowMs / 30_000);
  return [step - 1, step, step + 1].map((counter) => {
    const message = Buffer.from(counter.toString(16).padStart(16, '0'), 'hex');
    const mac = createHmac('sha1', key).update(message).digest();
    const offset = mac[19]! & 0xf;
    const value = ((mac[offset]! & 0x7f) << 24) | (mac[offset + 1]! << 16) | (mac[offset + 2]! << 8) | mac[offset + 3]!;
    return String(value % 1_000_000).padStart(6, '0');
  });
}
