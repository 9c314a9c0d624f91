import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the operator's API (docs/api.md) that records every call, for asserting what
 * the worker sent and in which order. Executions and versions are seeded by the test.
 */
export interface RecordedCall {
  /** Epoch ms the call arrived. */
  at: number;
  method: string;
  path: string;
  serviceKey: string | undefined;
  /** The W3C `traceparent` header the call carried (docs/operations.md#traces). */
  traceparent: string | undefined;
  body: unknown;
}

export interface RecordingApi {
  url: string;
  calls: RecordedCall[];
  executions: Map<string, Record<string, unknown>>;
  versions: Map<string, Array<Record<string, unknown>>>;
  /** Status to answer `started` with, per execution (default 200). */
  startedStatus: Map<string, number>;
  /** Resolves when a final report (completed/failed) for the execution arrives. */
  waitForFinal(executionId: string): Promise<RecordedCall>;
  /** Resolves when the `n`-th (1-based) call `POST …/{executionId}/{kind}` has arrived (waiting, resumed, …). */
  waitForCall(executionId: string, kind: string, n?: number): Promise<RecordedCall>;
  /** Stops answering (the port is closed, open connections cut), keeping what was recorded: an API outage. */
  suspend(): Promise<void>;
  /** Listens again on the same port after `suspend`. */
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startRecordingApi(): Promise<RecordingApi> {
  const calls: RecordedCall[] = [];
  const executions = new Map<string, Record<string, unknown>>();
  const versions = new Map<string, Array<Record<string, unknown>>>();
  const startedStatus = new Map<string, number>();
  const waiters = new Map<string, Array<(call: RecordedCall) => void>>();
  const callWaiters = new Set<() => void>();

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const call: RecordedCall = { at: Date.now(), method: req.method ?? '', path, serviceKey: req.headers['x-service-key'] as string | undefined, traceparent: req.headers.traceparent as string | undefined, body: raw ? JSON.parse(raw) : undefined };
      calls.push(call);
      for (const wake of [...callWaiters]) wake();
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let m: RegExpMatchArray | null;
      if (req.method === 'GET' && (m = path.match(/^\/api\/executions\/([^/]+)$/))) {
        const execution = executions.get(decodeURIComponent(m[1]!));
        return execution ? send(200, execution) : send(404, { detail: 'not found' });
      }
      if (req.method === 'GET' && (m = path.match(/^\/api\/workflows\/([^/]+)\/versions$/))) {
        const items = versions.get(decodeURIComponent(m[1]!)) ?? [];
        return send(200, { items, total: items.length });
      }
      if (req.method === 'POST' && (m = path.match(/^\/api\/executions\/([^/]+)\/(started|completed|failed)$/))) {
        const id = decodeURIComponent(m[1]!);
        if (m[2] === 'started') {
          const status = startedStatus.get(id) ?? 200;
          return send(status, status === 200 ? { execution_uuid: id, status: 'running' } : { detail: 'not runnable' });
        }
        send(200, { execution_uuid: id, status: m[2] });
        for (const wake of waiters.get(id) ?? []) wake(call);
        waiters.delete(id);
        return;
      }
      if (req.method === 'POST' && (m = path.match(/^\/api\/executions\/([^/]+)\/(waiting|resumed)$/))) {
        return send(200, { execution_uuid: decodeURIComponent(m[1]!), status: m[2] === 'waiting' ? 'waiting' : 'running' });
      }
      send(404, { detail: 'no such route' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let suspended: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    executions,
    versions,
    startedStatus,
    waitForFinal(executionId) {
      const done = calls.find((c) => c.method === 'POST' && (c.path.endsWith(`${executionId}/completed`) || c.path.endsWith(`${executionId}/failed`)));
      if (done) return Promise.resolve(done);
      return new Promise((resolve) => waiters.set(executionId, [...(waiters.get(executionId) ?? []), resolve]));
    },
    waitForCall(executionId, kind, n = 1) {
      return new Promise<RecordedCall>((resolve) => {
        const check = () => {
          const found = calls.filter((c) => c.method === 'POST' && c.path === `/api/executions/${executionId}/${kind}`);
          if (found.length >= n) {
            callWaiters.delete(check);
            resolve(found[n - 1]!);
          }
        };
        callWaiters.add(check);
        check();
      });
    },
    suspend() {
      suspended ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return suspended;
    },
    async resume() {
      if (!suspended) return;
      await suspended;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      suspended = undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Closing a server that is not listening answers with an error: it is closed all the same.
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
