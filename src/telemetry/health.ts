import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/**
 * `/healthz` (alive: 200 for as long as the process answers, draining included, so a liveness
 * probe never restarts a worker finishing its runs), `/readyz` (able to work), `/metrics`
 * (Prometheus) — docs/operations.md#health-and-metrics.
 */
export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface ReadinessCheck {
  name: string;
  check(signal: AbortSignal): Promise<void>;
}

export async function startHealthServer(options: { port: number; host?: string; registry: Registry; checks: ReadinessCheck[] }): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'method not allowed' });
    if (url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
    if (url.pathname === '/readyz') {
      void readiness(options.checks).then((result) => send(res, result.ok ? 200 : 503, result));
      return;
    }
    if (url.pathname === '/metrics') {
      void options.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': options.registry.contentType });
          res.end(text);
        },
        (error: Error) => send(res, 500, { error: error.message }),
      );
      return;
    }
    send(res, 404, { error: 'not found' });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

async function readiness(checks: ReadinessCheck[]): Promise<{ ok: boolean; checks: Record<string, string> }> {
  const results: Record<string, string> = {};
  await Promise.all(
    checks.map(async ({ name, check }) => {
      try {
        await check(AbortSignal.timeout(10_000));
        results[name] = 'ok';
      } catch (error) {
        results[name] = error instanceof Error ? error.message : String(error);
      }
    }),
  );
  return { ok: Object.values(results).every((r) => r === 'ok'), checks: results };
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
