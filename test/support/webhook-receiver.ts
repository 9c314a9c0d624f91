import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver over real HTTP that checks every delivery's signature itself, as the
 * Standard Webhooks specification defines it (HMAC-SHA256 with node:crypto over
 * `id.timestamp.body`, the key the base64 after `whsec_`), not with the library the service signs
 * with. `answer` decides each attempt's reply (by default 204).
 */

export interface HeardDelivery {
  id: string;
  timestamp: string;
  signatureValid: boolean;
  body: { type: string; id: string; timestamp: string; data: { execution: Record<string, unknown> } };
}

export interface WebhookReceiver {
  url: string;
  heard: HeardDelivery[];
  /** Resolves with the first delivery `match` accepts, heard already or later. */
  next(match: (d: HeardDelivery) => boolean): Promise<HeardDelivery>;
  close(): Promise<void>;
}

export function verifyStandardSignature(secret: string, id: string, timestamp: string, body: string, header: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return header.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startWebhookReceiver(secret: () => string, answer: (d: HeardDelivery, n: number) => { status: number; headers?: Record<string, string> } = () => ({ status: 204 })): Promise<WebhookReceiver> {
  const heard: HeardDelivery[] = [];
  const waiters: { match: (d: HeardDelivery) => boolean; resolve: (d: HeardDelivery) => void }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const timestamp = String(req.headers['webhook-timestamp'] ?? '');
      const delivery: HeardDelivery = { id, timestamp, signatureValid: verifyStandardSignature(secret(), id, timestamp, raw, String(req.headers['webhook-signature'] ?? '')), body: JSON.parse(raw) as HeardDelivery['body'] };
      heard.push(delivery);
      const reply = answer(delivery, heard.length);
      res.writeHead(reply.status, reply.headers ?? {}).end();
      for (const w of [...waiters]) if (w.match(delivery)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(delivery);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    heard,
    next: (match) => {
      const found = heard.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
