import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlPlaneError, createHttpControlPlane } from '../../src/control-plane/http-client.js';
import { backoffDelayMs, parseRetryAfterMs } from '../../src/control-plane/retry.js';
import type { Logger } from '../../src/telemetry/types.js';

const API_KEY = 'sk-test-0123456789-secret';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

type Responder = (req: Seen, res: http.ServerResponse, index: number) => void;

interface LogEntry {
  level: string;
  obj: Record<string, unknown>;
  msg: string | undefined;
}

function createLogger(entries: LogEntry[]): Logger {
  const at =
    (level: string) =>
    (obj: Record<string, unknown>, msg?: string): void => {
      entries.push({ level, obj, msg });
    };
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return logger;
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

let server: http.Server;
let baseUrl: string;
let seen: Seen[];
let responders: Responder[];
let logs: LogEntry[];

beforeEach(async () => {
  seen = [];
  responders = [];
  logs = [];
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const entry: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
      const index = seen.push(entry) - 1;
      const responder = responders[Math.min(index, responders.length - 1)];
      if (!responder) json(res, 500, { detail: 'no responder' });
      else responder(entry, res, index);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function client(extra: Partial<Parameters<typeof createHttpControlPlane>[0]> = {}) {
  const delays: number[] = [];
  const plane = createHttpControlPlane({
    baseUrl: `${baseUrl}/`,
    apiKey: API_KEY,
    logger: createLogger(logs),
    baseDelayMs: 100,
    maxDelayMs: 1_000,
    sleep: async (ms) => {
      delays.push(ms);
    },
    ...extra,
  });
  return { plane, delays };
}

const signal = (): AbortSignal => new AbortController().signal;

const completed = {
  completedAt: '2025-01-01T00:00:10.000Z',
  durationMs: 10_000,
  nSteps: 3,
  nAgentActions: 5,
  nScreenshots: 4,
  outputUrl: 'file:///a/output.json',
  videoUrl: 'file:///a/video.mp4',
  logsUrl: null,
};

describe('http control plane: requests', () => {
  it('sends X-Service-Key and the exact docs/api.md bodies on every call', async () => {
    responders = [
      (req, res) => {
        if (req.url.startsWith('/api/executions/ex%2F1') && req.method === 'GET') json(res, 200, { execution_uuid: 'ex/1', status: 'queued' });
        else if (req.url.endsWith('/versions')) json(res, 200, { items: [{ workflow_version_uuid: 'v1', workflow_uuid: 'w1', specification: {} }], total: 1 });
        else json(res, 200, { ok: true });
      },
    ];
    const { plane } = client();
    await expect(plane.getExecution('ex/1', signal())).resolves.toMatchObject({ execution_uuid: 'ex/1' });
    await expect(plane.listVersions('w1', signal())).resolves.toEqual([{ workflow_version_uuid: 'v1', workflow_uuid: 'w1', specification: {} }]);
    await expect(plane.markStarted('e1', '2025-01-01T00:00:00.000Z', signal())).resolves.toEqual({ ok: true });
    await plane.reportCompleted('e1', completed);
    await plane.reportFailed('e2', { ...completed, completedAt: undefined, failedAt: '2025-01-01T00:00:11.000Z', error: { code: 'timeout', message: 'too slow' } } as never);

    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /api/executions/ex%2F1',
      'GET /api/workflows/w1/versions',
      'POST /api/executions/e1/started',
      'POST /api/executions/e1/completed',
      'POST /api/executions/e2/failed',
    ]);
    for (const s of seen) expect(s.headers['x-service-key']).toBe(API_KEY);
    expect(seen[2]?.body).toEqual({ startedAt: '2025-01-01T00:00:00.000Z' });
    expect(seen[3]?.body).toEqual(completed);
    expect(seen[4]?.body).toEqual({
      failedAt: '2025-01-01T00:00:11.000Z',
      error: { code: 'timeout', message: 'too slow' },
      durationMs: 10_000,
      nSteps: 3,
      nAgentActions: 5,
      nScreenshots: 4,
      outputUrl: 'file:///a/output.json',
      videoUrl: 'file:///a/video.mp4',
      logsUrl: null,
    });
    expect(seen[3]?.headers['content-type']).toBe('application/json');
  });

  it('answers { ok: false } on 404 and 409 from started, without retrying', async () => {
    responders = [
      (_req, res) => json(res, 409, { detail: [{ loc: ['path', 'execution_uuid'], msg: 'execution is completed', type: 'conflict' }] }),
      (_req, res) => json(res, 404, { detail: 'Not Found' }),
    ];
    const { plane, delays } = client();
    await expect(plane.markStarted('e1', '2025-01-01T00:00:00.000Z', signal())).resolves.toEqual({ ok: false, status: 409, reason: 'execution is completed' });
    await expect(plane.markStarted('e1', '2025-01-01T00:00:00.000Z', signal())).resolves.toEqual({ ok: false, status: 404, reason: 'Not Found' });
    expect(seen).toHaveLength(2);
    expect(delays).toEqual([]);
  });

  it('does not retry a 422, logs what its detail[] says (never the input it echoes) and throws', async () => {
    const detail = [{ loc: ['body', 'durationMs'], msg: 'must be integer', type: 'type', input: 'echoed-Secret-71' }];
    responders = [(_req, res) => json(res, 422, { detail })];
    const { plane } = client();
    const error = await plane.reportCompleted('e1', completed).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect((error as ControlPlaneError).status).toBe(422);
    expect(seen).toHaveLength(1);
    const logged = logs.find((l) => l.level === 'error');
    expect(logged?.obj).toMatchObject({ status: 422, reason: 'body.durationMs: must be integer', body: { detail } });
    expect((error as Error).message).toContain('body.durationMs: must be integer');
    expect(JSON.stringify(logs)).not.toContain(API_KEY);
    // The error travels into the run's files: it never holds the body.
    expect((error as Error).message + JSON.stringify(error)).not.toContain('echoed-Secret-71');
  });
});

describe('http control plane: an answer of the wrong shape', () => {
  it('names the wrong fields, never the values of the body (an execution holds its input, secrets included)', async () => {
    const body = { execution_uuid: 'e1', workflow_version_uuid: 7, input_payload: { user: 'kofi', password: 'hunter2-SECRET' } };
    responders = [(_req, res) => json(res, 200, body)];
    const { plane } = client();
    const error = await plane.getExecution('e1', signal()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect((error as Error).message).toContain('workflow_version_uuid');
    expect((error as Error).message + JSON.stringify(error) + JSON.stringify(logs)).not.toContain('hunter2-SECRET');
  });
});

describe('http control plane: retries', () => {
  it('retries 5xx and 429 with jittered backoff inside its bounds, then succeeds', async () => {
    responders = [
      (_req, res) => json(res, 503, { detail: 'busy' }),
      (_req, res) => json(res, 429, { detail: 'slow down' }),
      (_req, res) => json(res, 500, { detail: 'oops' }),
      (_req, res) => json(res, 200, { execution_uuid: 'e1' }),
    ];
    const { plane, delays } = client({ random: () => 0.999 });
    await expect(plane.getExecution('e1', signal())).resolves.toEqual({ execution_uuid: 'e1' });
    expect(seen).toHaveLength(4);
    expect(delays).toHaveLength(3);
    // Full jitter: below min(max, base·2^attempt).
    [100, 200, 400].forEach((ceiling, i) => {
      expect(delays[i]).toBeGreaterThanOrEqual(0);
      expect(delays[i]).toBeLessThan(ceiling);
      expect(delays[i]).toBeGreaterThan(ceiling * 0.9);
    });
    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(3);
  });

  it('honours Retry-After', async () => {
    responders = [(_req, res) => json(res, 429, { detail: 'later' }, { 'Retry-After': '2' }), (_req, res) => json(res, 200, { ok: true })];
    const { plane, delays } = client();
    await expect(plane.markStarted('e1', '2025-01-01T00:00:00.000Z', signal())).resolves.toEqual({ ok: true });
    expect(delays).toEqual([2_000]);
  });

  it('retries network errors and request timeouts', async () => {
    responders = [
      (_req, res) => res.socket?.destroy(),
      () => {
        // Never answers: the per-request timeout must end this attempt.
      },
      (_req, res) => json(res, 200, { execution_uuid: 'e1' }),
    ];
    const { plane, delays } = client({ requestTimeoutMs: 200 });
    await expect(plane.getExecution('e1', signal())).resolves.toEqual({ execution_uuid: 'e1' });
    expect(seen).toHaveLength(3);
    expect(delays).toHaveLength(2);
  });

  it('gives markStarted a bounded number of attempts', async () => {
    responders = [(_req, res) => json(res, 502, { detail: 'bad gateway' })];
    const { plane } = client({ maxAttempts: 5 });
    await expect(plane.markStarted('e1', '2025-01-01T00:00:00.000Z', signal())).rejects.toBeInstanceOf(ControlPlaneError);
    expect(seen).toHaveLength(5);
    expect(logs.some((l) => l.level === 'error' && l.msg === 'control-plane call failed after retries')).toBe(true);
  });

  it('stops retrying as soon as the caller aborts', async () => {
    responders = [(_req, res) => json(res, 503, { detail: 'busy' })];
    const controller = new AbortController();
    const plane = createHttpControlPlane({
      baseUrl,
      apiKey: API_KEY,
      logger: createLogger(logs),
      sleep: async () => {
        controller.abort(new Error('shutting down'));
      },
    });
    await expect(plane.getExecution('e1', controller.signal)).rejects.toThrow('shutting down');
    expect(seen).toHaveLength(1);
  });

  it('keeps retrying a final report until its deadline, then throws and logs', async () => {
    responders = [(_req, res) => json(res, 503, { detail: 'down' })];
    // The deadline is measured on a clock only the waits move: however slow the machine, the same attempts are made.
    let clock = 0;
    const plane = createHttpControlPlane({
      baseUrl,
      apiKey: API_KEY,
      logger: createLogger(logs),
      finalReportDeadlineMs: 150,
      baseDelayMs: 5,
      maxDelayMs: 20,
      random: () => 0.5,
      now: () => clock,
      sleep: async (ms) => {
        clock += ms;
      },
    });
    const error = await plane.reportFailed('e1', { ...completed, failedAt: completed.completedAt, error: { code: 'internal', message: 'x' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect((error as ControlPlaneError).status).toBe(503);
    expect(seen.length).toBeGreaterThan(2);
    expect(logs.some((l) => l.level === 'error' && l.obj.path === '/api/executions/e1/failed')).toBe(true);
  });

  it('keeps a final report going past the bounded attempt count when the API recovers', async () => {
    responders = [...Array.from({ length: 7 }, () => (_req: Seen, res: http.ServerResponse) => json(res, 500, {})), (_req, res) => json(res, 200, {})];
    const { plane } = client({ maxAttempts: 3 });
    await plane.reportCompleted('e1', completed);
    expect(seen).toHaveLength(8);
  });
});

describe('backoff arithmetic', () => {
  it('draws full jitter below an exponential ceiling capped at the maximum', () => {
    expect(backoffDelayMs(0, 100, 1_000, () => 0)).toBe(0);
    expect(backoffDelayMs(0, 100, 1_000, () => 0.5)).toBe(50);
    expect(backoffDelayMs(3, 100, 1_000, () => 0.5)).toBe(400);
    expect(backoffDelayMs(10, 100, 1_000, () => 0.999)).toBe(999);
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const d = backoffDelayMs(attempt, 100, 1_000);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(1_000);
    }
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfterMs(null)).toBeUndefined();
    expect(parseRetryAfterMs('3')).toBe(3_000);
    expect(parseRetryAfterMs('soon')).toBeUndefined();
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfterMs('Wed, 01 Jan 2024 00:00:05 GMT', now)).toBe(0);
  });
});
