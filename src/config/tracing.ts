import { z } from 'zod';
import { bool, int, optionalString, optionalUrl } from './env.js';
import { CREDENTIAL_NAME, isTokenShaped } from '../domain/profile-secrets.js';

/**
 * The standard OpenTelemetry variables the worker and the local API read (docs/operations.md#traces,
 * docs/configuration.md#traces), with OpenTelemetry's own names, meanings and defaults. They are
 * validated at start like every other setting, and the exporter is built from the values parsed
 * here (not read again from the environment), so a value that starts the process is the value used.
 * Traces are exported only when an endpoint is set and the SDK is not disabled (`tracingWanted`).
 */

const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof PROTOCOLS)[number];

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type SamplerName = (typeof SAMPLERS)[number];

const protocol = z.enum(PROTOCOLS, { message: `must be one of ${PROTOCOLS.join(', ')}` }).optional();
const compression = z.enum(['gzip', 'none'], { message: 'must be "gzip" or "none"' }).optional();

/**
 * A `key=value,key=value` list (OTLP headers, resource attributes): values may be percent-encoded,
 * as the OpenTelemetry specification allows. An entry that is not `key=value` is named by its key
 * alone (or its position), never by its value: header values are credentials.
 */
const keyValueList = z
  .string()
  .optional()
  .transform((text, ctx): Record<string, string> | undefined => {
    if (text === undefined || text.trim() === '') return undefined;
    const out: Record<string, string> = {};
    text.split(',').forEach((entry, index) => {
      if (entry.trim() === '') return;
      const at = entry.indexOf('=');
      const key = at < 0 ? '' : entry.slice(0, at).trim();
      if (at < 0 || key === '') {
        ctx.addIssue({ code: 'custom', message: `entry ${index + 1} is not key=value` });
        return;
      }
      try {
        out[decodeURIComponent(key)] = decodeURIComponent(entry.slice(at + 1).trim());
      } catch {
        ctx.addIssue({ code: 'custom', message: `the value of "${key}" is not valid percent-encoding` });
      }
    });
    return out;
  });

export const tracingSettingsSchema = z.object({
  /** `true` turns tracing off whatever else is set. */
  OTEL_SDK_DISABLED: bool.default(false),
  /** `otlp`, or `none` to export nothing. */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none'], { message: 'must be "otlp" or "none"' }).default('otlp'),
  /** Base URL of the OTLP receiver (http: `{endpoint}/v1/traces`; grpc: the endpoint itself). Unset with the next one: no traces. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl(['http:', 'https:']),
  /** Full URL traces go to, as given (wins over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl(['http:', 'https:']),
  /** `http/protobuf` (default), `http/json` or `grpc`. */
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  /** The protocol for traces (wins over OTEL_EXPORTER_OTLP_PROTOCOL). */
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  /** Headers sent with every export, `key=value,…` (an API key of the backend). Secret. */
  OTEL_EXPORTER_OTLP_HEADERS: keyValueList,
  /** Headers for traces, added to (and winning over) OTEL_EXPORTER_OTLP_HEADERS. Secret. */
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValueList,
  /** How long one export may take. */
  OTEL_EXPORTER_OTLP_TIMEOUT: int(1, 600_000).default(10_000),
  /** The export time limit for traces (wins over OTEL_EXPORTER_OTLP_TIMEOUT). */
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: int(1, 600_000).optional(),
  /** `gzip` or `none` (default). */
  OTEL_EXPORTER_OTLP_COMPRESSION: compression,
  /** Compression for traces (wins over OTEL_EXPORTER_OTLP_COMPRESSION). */
  OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: compression,
  /** `service.name` of the spans; unset: `execution-worker` (the local API: `execution-worker-api`). */
  OTEL_SERVICE_NAME: optionalString,
  /** More resource attributes, `key=value,…` (`deployment.environment.name=prod`). */
  OTEL_RESOURCE_ATTRIBUTES: keyValueList,
  /** Which traces are kept: OpenTelemetry's sampler names. */
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS, { message: `must be one of ${SAMPLERS.join(', ')}` }).default('parentbased_always_on'),
  /** The ratio kept by the `traceidratio` samplers, 0 to 1; unset: 1. */
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .trim()
    .regex(/^(?:0(?:\.\d+)?|1(?:\.0+)?|\.\d+)$/, 'must be a number from 0 to 1')
    .transform(Number)
    .optional(),
  /** How long spans wait to be sent together. */
  OTEL_BSP_SCHEDULE_DELAY: int(1, 600_000).default(5_000),
  /** Spans held at most while they wait; past it, new ones are dropped (never the run). */
  OTEL_BSP_MAX_QUEUE_SIZE: int(1, 1_000_000).default(2_048),
  /** Spans sent in one export at most. */
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: int(1, 1_000_000).default(512),
});

export type TracingSettings = z.output<typeof tracingSettingsSchema>;

/** The variables whose values are credentials: never repeated in an error, scrubbed from the process log. */
export const TRACING_SECRET_VARIABLES = ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'] as const;

/** Whether the settings ask for traces: an endpoint, and neither the SDK nor the exporter turned off. */
export function tracingWanted(settings: TracingSettings): boolean {
  if (settings.OTEL_SDK_DISABLED || settings.OTEL_TRACES_EXPORTER === 'none') return false;
  return settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined || settings.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
}

/** Header names that carry a credential: the general ones, and Honeycomb's `x-honeycomb-team`. */
const CREDENTIAL_HEADER = new RegExp(`${CREDENTIAL_NAME.source}|team`, 'i');

/**
 * The header values of the settings that are credentials: secrets of the process (compose.ts's
 * processSecrets), scrubbed wherever they would show. A value is one when its header's name
 * says so or it is shaped like a token; a dataset or tenant name (`x-honeycomb-dataset=checkout`)
 * is not, or every "checkout" a page shows the model would be blanked out.
 */
export function tracingSecrets(settings: TracingSettings): string[] {
  return [settings.OTEL_EXPORTER_OTLP_HEADERS, settings.OTEL_EXPORTER_OTLP_TRACES_HEADERS]
    .flatMap((headers) => Object.entries(headers ?? {}))
    .filter(([name, value]) => value.length > 0 && (CREDENTIAL_HEADER.test(name) || isTokenShaped(value)))
    .map(([, value]) => value);
}
