import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { OtlpProtocol, TracingSettings } from '../config/tracing.js';

/**
 * The OTLP exporter the settings ask for (docs/configuration.md#traces), made from the parsed
 * settings as OpenTelemetry's specification reads the variables: the signal's own variable wins
 * over the general one; `OTEL_EXPORTER_OTLP_ENDPOINT` is a base to which http adds `/v1/traces`,
 * while `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is; grpc takes either as it is. Only the
 * exporter package of the chosen protocol is loaded.
 */
export interface ExporterOptions {
  protocol: OtlpProtocol;
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  compression: 'gzip' | 'none';
}

export function exporterOptions(settings: TracingSettings): ExporterOptions {
  const protocol = settings.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? settings.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  const base = settings.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (protocol === 'grpc' ? base : base && `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) throw new Error('no OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)');
  return {
    protocol,
    url,
    headers: { ...settings.OTEL_EXPORTER_OTLP_HEADERS, ...settings.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    timeoutMs: settings.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? settings.OTEL_EXPORTER_OTLP_TIMEOUT,
    compression: settings.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION ?? settings.OTEL_EXPORTER_OTLP_COMPRESSION ?? 'none',
  };
}

/** The exporter of `options.protocol`, its package imported now (the others never are). */
export async function createExporter(options: ExporterOptions): Promise<SpanExporter> {
  const { url, headers, timeoutMs: timeoutMillis } = options;
  switch (options.protocol) {
    case 'http/protobuf': {
      const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
      return new OTLPTraceExporter({ url, headers, timeoutMillis, compression: compressionOf<typeof OTLPTraceExporter>(options) });
    }
    case 'http/json': {
      const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
      return new OTLPTraceExporter({ url, headers, timeoutMillis, compression: compressionOf<typeof OTLPTraceExporter>(options) });
    }
    case 'grpc': {
      const [{ OTLPTraceExporter }, { Metadata }] = await Promise.all([import('@opentelemetry/exporter-trace-otlp-grpc'), import('@grpc/grpc-js')]);
      // gRPC sends headers as metadata; `http://` is a plain connection, `https://` TLS (the exporter's reading of the scheme).
      const metadata = new Metadata();
      for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
      return new OTLPTraceExporter({ url, metadata, timeoutMillis, compression: compressionOf<typeof OTLPTraceExporter>(options) });
    }
  }
}

/** The setting as the exporter's own enum (its values are these strings). */
type Compression<E extends abstract new (...args: never[]) => unknown> = NonNullable<ConstructorParameters<E>[0]> extends { compression?: infer C } ? C : never;

function compressionOf<E extends abstract new (...args: never[]) => unknown>(options: ExporterOptions): Compression<E> {
  return options.compression as Compression<E>;
}
