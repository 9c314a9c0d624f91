import { randomUUID } from 'node:crypto';
import os from 'node:os';
import {
  context,
  diag,
  DiagLogLevel,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, NodeTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-node';
import type { TracingSettings } from '../config/tracing.js';
import { scrubText } from '../telemetry/log-secrets.js';
import type { Logger, TraceAttributes, TraceSpan, TraceSpanKind, TraceSpanOptions, Tracing } from '../telemetry/types.js';
import { createExporter, exporterOptions } from './exporter.js';

/**
 * The tracing port on OpenTelemetry's Node SDK (docs/operations.md#traces): a tracer provider with
 * the AsyncLocalStorage context manager and W3C propagation, registered for the process, a batch
 * span processor and the OTLP exporter of the configured protocol. Loaded only when tracing is
 * configured (start.ts imports this file on demand), so OpenTelemetry's packages stay out of a
 * process that does not export.
 *
 * Every string a span is given passes through the redaction of the secrets alive in the process
 * (telemetry/log-secrets.ts, the one the process log applies: each run's secrets in every form
 * while it runs, the keys for good), here, once, whoever made the span.
 */

const KINDS: Record<TraceSpanKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

/** The spans' instrumentation scope: the worker's own code. */
const SCOPE = 'execution-worker';

export async function createOtelTracing(settings: TracingSettings, options: { serviceName: string; logger: Logger }): Promise<Tracing> {
  const exporterSettings = exporterOptions(settings);
  const exporter = await createExporter(exporterSettings);
  const log = options.logger.child({ component: 'tracing' });
  // The SDK's own troubles (an export refused, a receiver out of reach) go to the process log.
  diag.setLogger(
    {
      error: (message, ...args) => log.warn({ detail: args.map(String).join(' ').slice(0, 500) }, `tracing: ${message}`),
      warn: (message, ...args) => log.warn({ detail: args.map(String).join(' ').slice(0, 500) }, `tracing: ${message}`),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({
        'host.name': os.hostname(),
        'service.instance.id': randomUUID(),
        ...settings.OTEL_RESOURCE_ATTRIBUTES,
        // OTEL_SERVICE_NAME wins over a service.name among the resource attributes (the specification's rule).
        'service.name': settings.OTEL_SERVICE_NAME ?? settings.OTEL_RESOURCE_ATTRIBUTES?.['service.name'] ?? options.serviceName,
      }),
    ),
    sampler: samplerOf(settings),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        scheduledDelayMillis: settings.OTEL_BSP_SCHEDULE_DELAY,
        maxQueueSize: settings.OTEL_BSP_MAX_QUEUE_SIZE,
        maxExportBatchSize: Math.min(settings.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, settings.OTEL_BSP_MAX_QUEUE_SIZE),
        exportTimeoutMillis: exporterSettings.timeoutMs,
      }),
    ],
  });
  // The process's context manager (AsyncLocalStorage) and propagator (W3C traceparent, tracestate, baggage).
  provider.register();
  const tracer = provider.getTracer(SCOPE);
  log.info({ protocol: exporterSettings.protocol, endpoint: safeEndpoint(exporterSettings.url) }, 'exporting traces');

  const otelOf = new WeakMap<TraceSpan, Span>();
  const wrap = (span: Span): TraceSpan => {
    let ended = false;
    const own: TraceSpan = {
      setAttributes: (attributes) => span.setAttributes(clean(attributes)),
      addEvent: (name, attributes, atMs) => span.addEvent(scrubText(name), clean(attributes ?? {}), new Date(atMs ?? Date.now())),
      fail: (type, message) => {
        span.setAttribute('error.type', scrubText(type));
        span.setStatus({ code: SpanStatusCode.ERROR, ...(message !== undefined ? { message: scrubText(message) } : {}) });
      },
      end: (endMs) => {
        if (ended) return;
        ended = true;
        span.end(new Date(endMs ?? Date.now()));
      },
      get traceparent() {
        const carrier: Record<string, string> = {};
        propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
        return carrier.traceparent;
      },
    };
    otelOf.set(own, span);
    return own;
  };
  const parentOf = (options: TraceSpanOptions | undefined): Context => {
    const parent = options?.parent;
    if (parent === null) return ROOT_CONTEXT;
    // One that cannot be read extracts to no span: the span starts a new trace (W3C Trace Context).
    if (typeof parent === 'string') return propagation.extract(ROOT_CONTEXT, { traceparent: parent });
    const own = parent && otelOf.get(parent);
    return own ? trace.setSpan(ROOT_CONTEXT, own) : context.active();
  };
  const startSpan = (name: string, options?: TraceSpanOptions): TraceSpan =>
    wrap(
      tracer.startSpan(
        scrubText(name),
        {
          kind: KINDS[options?.kind ?? 'internal'],
          attributes: clean(options?.attributes ?? {}),
          // Every span on one clock (the wall clock), whether made live or from an event's times.
          startTime: new Date(options?.startMs ?? Date.now()),
        },
        parentOf(options),
      ),
    );
  const withSpan = <T>(span: TraceSpan, fn: () => T): T => {
    const otel = otelOf.get(span);
    return otel ? context.with(trace.setSpan(context.active(), otel), fn) : fn();
  };

  let stopping: Promise<void> | undefined;
  return {
    enabled: true,
    startSpan,
    withSpan,
    async inSpan(name, options, fn) {
      const span = startSpan(name, options);
      try {
        return await withSpan(span, () => fn(span));
      } catch (error) {
        span.fail(errorType(error), error instanceof Error ? error.message : String(error));
        throw error;
      } finally {
        span.end();
      }
    },
    inject(headers) {
      propagation.inject(context.active(), headers);
    },
    logFields() {
      const span = trace.getSpan(context.active());
      const ids = span?.spanContext();
      return ids && isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined;
    },
    shutdown() {
      stopping ??= (async () => {
        // What is left is exported within the exporter's own time limit, then the process lets go of
        // the globals (a later start, in the same process, registers its own).
        await provider.shutdown().catch((error: unknown) => log.warn({ err: String(error) }, 'tracing: the last spans could not be exported'));
        trace.disable();
        context.disable();
        propagation.disable();
        diag.disable();
      })();
      return stopping;
    },
  };
}

/** OTEL_TRACES_SAMPLER and its argument, as OpenTelemetry's specification defines them. */
function samplerOf(settings: TracingSettings): Sampler {
  const ratio = settings.OTEL_TRACES_SAMPLER_ARG ?? 1;
  switch (settings.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/** Attributes as OpenTelemetry takes them: no empty value, every string redacted. */
function clean(attributes: TraceAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    out[key] = (typeof value === 'string' ? scrubText(value) : Array.isArray(value) ? value.map((item: string | number) => (typeof item === 'string' ? scrubText(item) : item)) : value) as AttributeValue;
  }
  return out;
}

/** A thrown value's stable code (an ExecutionError's), else its class name. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return error instanceof Error ? error.name : 'error';
}

/** The receiver's address as the log may show it: no user, password or query. */
function safeEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(unreadable)';
  }
}
