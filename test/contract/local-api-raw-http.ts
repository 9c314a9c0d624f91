import net from 'node:net';

/**
 * HTTP/1.1 over a bare socket, for requests that `fetch` would not send as written: `fetch`
 * normalises a URL (dot segments, case of the scheme, percent-encoding of some bytes) and never
 * sends an absolute-form target. The access tests need the bytes on the wire to be exactly the
 * spelling under test.
 */

export interface RawRequest {
  method: string;
  /** The request target exactly as sent: `/p%61th`, `http://host:port/path`, `//x`. */
  target: string;
  /** `host:port` of the server to connect to. */
  address: string;
  /** The `Host` header; the address unless given; null sends none. */
  host?: string | null;
  /** `1.1` unless given. */
  httpVersion?: '1.0' | '1.1';
  headers?: Record<string, string>;
  body?: string;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export async function rawRequest(req: RawRequest): Promise<RawResponse> {
  const [hostname, port] = splitAddress(req.address);
  const body = req.body === undefined ? undefined : Buffer.from(req.body, 'utf8');
  const lines = [`${req.method} ${req.target} HTTP/${req.httpVersion ?? '1.1'}`, 'Connection: close'];
  if (req.host !== null) lines.push(`Host: ${req.host ?? req.address}`);
  for (const [name, value] of Object.entries(req.headers ?? {})) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');

  const raw = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: hostname, port }, () => {
      socket.write(body === undefined ? head : Buffer.concat([head, body]));
    });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
  });
  return parseResponse(raw, req.method === 'HEAD');
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at).replace(/^\[|\]$/g, ''), Number(address.slice(at + 1))];
}

function parseResponse(raw: Buffer, head: boolean): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  if (end === -1) throw new Error(`no complete response: ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`);
  const [statusLine, ...headerLines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  if (!Number.isInteger(status)) throw new Error(`not a status line: ${statusLine}`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = head ? Buffer.alloc(0) : raw.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') rest = unchunk(rest);
  return { status, headers, body: rest.toString('utf8') };
}

function unchunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
