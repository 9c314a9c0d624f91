import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

/**
 * A small OTLP trace receiver for tests: what a collector does on its front, no more. It takes
 * OTLP/HTTP (`POST /v1/traces`, protobuf or JSON, gzip or not) and OTLP/gRPC (the TraceService's
 * Export), decodes what the exporter sent with the protocol's own message definitions
 * (otlp/trace.proto, read by protobufjs), and keeps every span in one form whatever the wire.
 * Tests await the spans they expect (`waitFor`): each export wakes the waiters.
 */

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Absent for a span with no parent. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; timeMs: number; attributes: Record<string, unknown> }>;
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  resource: Record<string, unknown>;
  scope: string;
}

export interface ReceivedExport {
  /** `http/protobuf`, `http/json` or `grpc`. */
  protocol: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  spans: ReceivedSpan[];
}

export interface OtlpReceiver {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for this receiver (http: the base; gRPC: the address). */
  readonly endpoint: string;
  readonly exports: readonly ReceivedExport[];
  readonly spans: readonly ReceivedSpan[];
  /** Resolves with the spans once `done(spans)` holds for those received so far; rejects after `timeoutMs`. */
  waitFor(done: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<readonly ReceivedSpan[]>;
  close(): Promise<void>;
}

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

let rootPromise: Promise<protobuf.Root> | undefined;
const root = () => (rootPromise ??= protobuf.load(fileURLToPath(new URL('otlp/trace.proto', import.meta.url))));

/** OTLP/HTTP on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const messages = await root();
  const collected = collector();
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const type = String(req.headers['content-type'] ?? '');
      const json = type.includes('json');
      let decoded: unknown;
      try {
        decoded = json ? JSON.parse(body.toString('utf8')) : messages.lookupType('opentelemetry.proto.ExportTraceServiceRequest').toObject(messages.lookupType('opentelemetry.proto.ExportTraceServiceRequest').decode(body), { longs: String, bytes: Buffer });
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
        return;
      }
      collected.add({ protocol: json ? 'http/json' : 'http/protobuf', path: req.url ?? '', headers: req.headers, spans: spansOf(decoded, json) });
      if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.alloc(0));
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    ...collected.view,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** OTLP/gRPC on a free loopback port, over a plain (insecure) connection. */
export async function startOtlpGrpcReceiver(): Promise<OtlpReceiver> {
  const messages = await root();
  const request = messages.lookupType('opentelemetry.proto.ExportTraceServiceRequest');
  const collected = collector();
  const server = new grpc.Server();
  const raw = (value: Buffer) => value;
  server.addService(
    { Export: { path: EXPORT_PATH, requestStream: false, responseStream: false, requestSerialize: raw, requestDeserialize: raw, responseSerialize: raw, responseDeserialize: raw } },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        const decoded = request.toObject(request.decode(call.request), { longs: String, bytes: Buffer });
        collected.add({ protocol: 'grpc', path: EXPORT_PATH, headers: call.metadata.getMap() as Record<string, string>, spans: spansOf(decoded, false) });
        callback(null, Buffer.alloc(0));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
  return {
    endpoint: `http://127.0.0.1:${port}`,
    ...collected.view,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

function collector() {
  const exports: ReceivedExport[] = [];
  const spans: ReceivedSpan[] = [];
  const arrived = new EventEmitter();
  return {
    add(received: ReceivedExport) {
      exports.push(received);
      spans.push(...received.spans);
      arrived.emit('spans');
    },
    view: {
      exports,
      spans,
      async waitFor(done: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs = 60_000): Promise<readonly ReceivedSpan[]> {
        const signal = AbortSignal.timeout(timeoutMs);
        while (!done(spans)) {
          try {
            await once(arrived, 'spans', { signal });
          } catch {
            throw new Error(`the spans expected did not arrive within ${timeoutMs} ms; received: ${spans.map((s) => s.name).join(', ')}`);
          }
        }
        return spans;
      },
    },
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

type Wire = Record<string, unknown>;

/**
 * Spans of a decoded request. Protobuf gives ids as bytes and 64-bit numbers as strings (as asked
 * of toObject); OTLP/JSON gives ids as hex and numbers as strings or numbers, in lowerCamelCase.
 */
function spansOf(request: unknown, json: boolean): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of ((request as Wire).resourceSpans as Wire[] | undefined) ?? []) {
    const resource = attributesOf(((resourceSpans.resource as Wire | undefined)?.attributes as Wire[] | undefined) ?? []);
    for (const scopeSpans of (resourceSpans.scopeSpans as Wire[] | undefined) ?? []) {
      const scope = String((scopeSpans.scope as Wire | undefined)?.name ?? '');
      for (const span of (scopeSpans.spans as Wire[] | undefined) ?? []) {
        const parent = id(span.parentSpanId, json);
        const status = (span.status as Wire | undefined) ?? {};
        out.push({
          traceId: id(span.traceId, json)!,
          spanId: id(span.spanId, json)!,
          ...(parent ? { parentSpanId: parent } : {}),
          name: String(span.name),
          kind: Number(span.kind ?? 0),
          startMs: nanosToMs(span.startTimeUnixNano),
          endMs: nanosToMs(span.endTimeUnixNano),
          attributes: attributesOf((span.attributes as Wire[] | undefined) ?? []),
          events: ((span.events as Wire[] | undefined) ?? []).map((event) => ({ name: String(event.name), timeMs: nanosToMs(event.timeUnixNano), attributes: attributesOf((event.attributes as Wire[] | undefined) ?? []) })),
          status: { code: Number(status.code ?? 0), message: String(status.message ?? '') },
          resource,
          scope,
        });
      }
    }
  }
  return out;
}

function id(value: unknown, json: boolean): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const hex = json ? String(value) : Buffer.from(value as Uint8Array).toString('hex');
  return hex === '' ? undefined : hex;
}

function nanosToMs(value: unknown): number {
  return value === undefined ? 0 : Number(BigInt(String(value)) / 1_000_000n);
}

function attributesOf(list: Wire[]): Record<string, unknown> {
  return Object.fromEntries(list.map((kv) => [String(kv.key), valueOf(kv.value as Wire | undefined)]));
}

function valueOf(value: Wire | undefined): unknown {
  if (!value) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return Number(value.doubleValue);
  if ('arrayValue' in value) return (((value.arrayValue as Wire).values as Wire[] | undefined) ?? []).map(valueOf);
  if ('kvlistValue' in value) return attributesOf(((value.kvlistValue as Wire).values as Wire[] | undefined) ?? []);
  if ('bytesValue' in value) return value.bytesValue;
  return undefined;
}

/** The spans of one trace as a tree, by name: `execution > browser_phase > chat claude-…`. */
export function pathsOf(spans: readonly ReceivedSpan[], traceId: string): string[] {
  const mine = spans.filter((s) => s.traceId === traceId);
  const byId = new Map(mine.map((s) => [s.spanId, s]));
  return mine.map((span) => {
    const names = [span.name];
    for (let at = span.parentSpanId ? byId.get(span.parentSpanId) : undefined; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) names.unshift(at.name);
    return names.join(' > ');
  });
}
