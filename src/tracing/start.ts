import { tracingWanted, type TracingSettings } from '../config/tracing.js';
import { noTracing } from '../telemetry/tracing.js';
import type { Logger, Tracing } from '../telemetry/types.js';

/**
 * Tracing for a process (docs/operations.md#traces): OpenTelemetry when the settings name an
 * endpoint, else `noTracing`. OpenTelemetry's packages are imported here, on demand, and only
 * then: a process without the variables never loads them, and its spans cost a call that does
 * nothing.
 */
export async function startTracing(settings: TracingSettings, options: { serviceName: string; logger: Logger }): Promise<Tracing> {
  if (!tracingWanted(settings)) return noTracing;
  const { createOtelTracing } = await import('./otel-tracing.js');
  return createOtelTracing(settings, options);
}

/** `service.name` of the worker's spans when OTEL_SERVICE_NAME is unset. */
export const WORKER_SERVICE_NAME = 'execution-worker';
/** `service.name` of the local API's spans (`execution-worker serve`) when OTEL_SERVICE_NAME is unset. */
export const LOCAL_API_SERVICE_NAME = 'execution-worker-api';
