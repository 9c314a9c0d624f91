import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { Webhook } from 'standardwebhooks';
import type { DeliveryAttempt } from '../../contract/webhooks.js';
import type { TargetPolicy } from './target-policy.js';

/**
 * One attempt at a delivery (docs/api.md#webhooks): the body signed as the Standard Webhooks
 * specification says, by its reference library (`standardwebhooks`: `webhook-id`,
 * `webhook-timestamp` of this attempt, `webhook-signature: v1,<base64 HMAC-SHA256>`), POSTed to
 * the address the target was checked to have (targets.ts): the name is resolved and checked here,
 * and the socket is opened to that address by our `connect`, so no second lookup can lead
 * elsewhere. Redirects are not followed (a 3xx is a failed attempt), the attempt has `timeoutMs`
 * in all, the name's lookup included, and at most `maxAnswerBytes` of the answer are read.
 *
 * A 2xx status is the receiver's acknowledgement, as Standard Webhooks asks of it: the attempt is
 * delivered once the status is read, even if the receiver then stalls and the rest of its answer
 * is cut at `timeoutMs`. A failure to connect is recorded as "connection failed", never the
 * errno: the attempt list must not tell a refused port from an unreachable host.
 */

export interface SendOptions {
  /** The target rules, resolver and lookup bound (target-policy.ts), shared with the routes. */
  policy: TargetPolicy;
  /** Opens the socket to the checked address (tests watch it); net.connect / tls.connect by default. */
  connect?: (to: { address: string; port: number; tls: boolean; servername: string | undefined }) => net.Socket;
  timeoutMs: number;
  maxAnswerBytes: number;
  /** Certificates trusted besides Node's (tests). */
  ca?: string;
}

export interface Message {
  id: string;
  body: string;
}

const defaultConnect: NonNullable<SendOptions['connect']> = ({ address, port, tls: secure, servername }) =>
  secure ? tls.connect({ host: address, port, ...(servername ? { servername } : {}) }) : net.connect({ host: address, port });

/** Sends `message` to `url` signed with `secret`; the attempt as kept, never thrown. */
export async function sendOnce(url: string, secret: string, message: Message, opts: SendOptions, now = new Date()): Promise<DeliveryAttempt> {
  const started = Date.now();
  const attempt = (status: number | null, error: string | null): DeliveryAttempt => ({ attemptedAt: now.toISOString(), status, latencyMs: Date.now() - started, error });
  const timedOut = () => attempt(null, `timed out (${opts.timeoutMs} ms)`);
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const parsed = opts.policy.parse(url);
  if (!parsed.ok) return attempt(null, `the URL ${parsed.reason}`);
  const { target } = parsed;
  const checked = await opts.policy.check(target, signal);
  if (signal.aborted) return timedOut();
  if (!checked.ok) return attempt(null, `refused before connecting: ${checked.reason}`);

  const signature = new Webhook(secret).sign(message.id, now, message.body);
  const secure = target.url.protocol === 'https:';
  const connect = opts.connect ?? defaultConnect;
  const servername = net.isIP(target.host) === 0 ? target.host : undefined;
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(message.body)),
    'user-agent': 'execution-worker (webhook)',
    host: target.url.host,
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signature,
  };
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const options: https.RequestOptions = {
        method: 'POST',
        path: `${target.url.pathname}${target.url.search}`,
        headers,
        signal,
        // The socket goes to the checked address; TLS checks the certificate against the name.
        createConnection: () => connect({ address: checked.address, port: target.port, tls: secure, servername }),
        ...(secure && opts.ca ? { ca: [...tls.rootCertificates, opts.ca] } : {}),
      };
      const request = (secure ? https : http).request(options, (response) => {
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // Past the cap the rest is not read: the status is all we keep.
          if (read > opts.maxAnswerBytes) response.destroy();
        });
        response.once('close', () => resolve(response.statusCode ?? 0));
        response.once('error', () => resolve(response.statusCode ?? 0));
      });
      request.once('error', reject);
      request.end(message.body);
    });
    if (status >= 200 && status <= 299) return attempt(status, null);
    if (status >= 300 && status <= 399) return attempt(status, `HTTP ${status}: redirects are not followed`);
    return attempt(status, `HTTP ${status}`);
  } catch {
    if (signal.aborted) return timedOut();
    return attempt(null, 'connection failed');
  }
}
