import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/env.js';
import { loadConfig } from '../../src/config/schema.js';
import { tracingSecrets, tracingSettingsSchema, tracingWanted } from '../../src/config/tracing.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { parseJobData } from '../../src/domain/job.js';
import { formatTraceParent, parseTraceParent } from '../../src/domain/trace-context.js';
import { noTracing } from '../../src/telemetry/tracing.js';
import { exporterOptions } from '../../src/tracing/exporter.js';
import { startTracing } from '../../src/tracing/start.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';

/** Tracing's settings, its W3C traceparent reading and the job's field (docs/operations.md#traces). */

const hex = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length });
const ids = fc.record({ traceId: hex(32).filter((id) => !/^0+$/.test(id)), spanId: hex(16).filter((id) => !/^0+$/.test(id)), flags: fc.integer({ min: 0, max: 255 }) });

describe('traceparent', () => {
  it('reads back every traceparent it writes', () => {
    fc.assert(
      fc.property(ids, (parent) => {
        expect(parseTraceParent(formatTraceParent(parent))).toEqual(parent);
      }),
    );
  });

  it('refuses every text that is not one: a changed character, an id of zeros, version ff, a tail on version 00', () => {
    fc.assert(
      fc.property(ids, fc.nat(), fc.constantFrom(...'gGX-_ .'), (parent, at, bad) => {
        const text = formatTraceParent(parent);
        const index = at % text.length;
        // One character of the form made wrong: a non-hex character in a field, or a dash replaced.
        const changed = text.slice(0, index) + (text[index] === '-' ? 'a' : bad === '-' ? 'x' : bad) + text.slice(index + 1);
        expect(parseTraceParent(changed)).toBeUndefined();
      }),
    );
    const good = formatTraceParent({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', flags: 1 });
    for (const text of [good.replace('4bf92f3577b34da6a3ce929d0e0e4736', '0'.repeat(32)), good.replace('00f067aa0ba902b7', '0'.repeat(16)), `ff${good.slice(2)}`, `${good}-extra`, good.toUpperCase(), '']) {
      expect(parseTraceParent(text), text).toBeUndefined();
    }
    // A later version may add fields: they are ignored.
    expect(parseTraceParent(`01${good.slice(2)}-more`)).toMatchObject({ spanId: '00f067aa0ba902b7' });
  });
});

describe("the job's traceparent", () => {
  const job = { executionId: 'e-1' };
  it('is kept when it reads as one, dropped when not, and a job whose traceparent is not a string is invalid', () => {
    const good = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(parseJobData({ ...job, traceparent: ` ${good} ` }).traceparent).toBe(good);
    expect(parseJobData({ ...job, traceparent: 'not-a-traceparent' })).toEqual(job);
    expect(() => parseJobData({ ...job, traceparent: 7 })).toThrow(/traceparent/);
    // A later version's extra fields, however long, do not fail the job nor travel on.
    const later = `cc-${good.slice(3, 52)}-01-${'x'.repeat(600)}`;
    expect(parseJobData({ ...job, traceparent: later }).traceparent).toBe(`00-${good.slice(3, 52)}-01`);
    expect(parseJobData({ ...job, traceparent: `${good}${'-x'.repeat(5000)}` })).toEqual(job);
  });
});

describe('tracing settings', () => {
  it('exports only with an endpoint, and neither the SDK nor the exporter turned off', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingWanted(tracingSettingsSchema.parse({}))).toBe(false);
    expect(tracingWanted(tracingSettingsSchema.parse({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))).toBe(false);
    expect(tracingWanted(tracingSettingsSchema.parse(endpoint))).toBe(true);
    expect(tracingWanted(tracingSettingsSchema.parse({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }))).toBe(true);
    expect(tracingWanted(tracingSettingsSchema.parse({ ...endpoint, OTEL_SDK_DISABLED: 'true' }))).toBe(false);
    expect(tracingWanted(tracingSettingsSchema.parse({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }))).toBe(false);
  });

  it('starts nothing without an endpoint', async () => {
    expect(await startTracing(tracingSettingsSchema.parse({ OTEL_SERVICE_NAME: 'x' }), { serviceName: 'w', logger: createSilentLogger() })).toBe(noTracing);
  });

  it('reads the variables as OpenTelemetry specifies: the signal variable wins, http adds /v1/traces to the base, grpc takes it as it is', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' };
    expect(exporterOptions(tracingSettingsSchema.parse(base))).toEqual({ protocol: 'http/protobuf', url: 'http://collector:4318/v1/traces', headers: {}, timeoutMs: 10_000, compression: 'none' });
    expect(exporterOptions(tracingSettingsSchema.parse({ ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/in' })).url).toBe('https://traces.example/in');
    expect(exporterOptions(tracingSettingsSchema.parse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).url).toBe('http://collector:4317');
    expect(
      exporterOptions(
        tracingSettingsSchema.parse({
          ...base,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
          OTEL_EXPORTER_OTLP_HEADERS: 'a=1,authorization=Basic%20eA%3D%3D',
          OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'a=2',
          OTEL_EXPORTER_OTLP_TIMEOUT: '5000',
          OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
        }),
      ),
    ).toEqual({ protocol: 'http/json', url: 'http://collector:4318/v1/traces', headers: { a: '2', authorization: 'Basic eA==' }, timeoutMs: 5000, compression: 'gzip' });
  });

  it('keeps the credentials of the OTLP headers secret, not the names of datasets and tenants beside them', () => {
    const settings = tracingSettingsSchema.parse({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://api.honeycomb.test',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=hcKEY123456,x-honeycomb-dataset=checkout,x-scope-orgid=acme,authorization=Basic%20eA%3D%3D,x-tenant=Zq7rP2xK9mW4vB8n',
    });
    const secrets = tracingSecrets(settings);
    expect(secrets.sort()).toEqual(['Basic eA==', 'Zq7rP2xK9mW4vB8n', 'hcKEY123456'].sort());
    // A page that says "checkout" is shown as it is; the key is not.
    const vault = createSecretVault(undefined, undefined, secrets);
    expect(vault.redact('Welcome to Acme Corp. Proceed to checkout with hcKEY123456.')).toBe('Welcome to Acme Corp. Proceed to checkout with [REDACTED].');
  });

  it('names a bad value with a clear message, never repeating a header value', () => {
    const refused = (env: Record<string, string>): string => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL.*http\/protobuf, http\/json, grpc/);
    expect(refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(refused({ OTEL_TRACES_SAMPLER_ARG: '1.5' })).toMatch(/OTEL_TRACES_SAMPLER_ARG.*from 0 to 1/);
    const headers = refused({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%zz-secret-value' });
    expect(headers).toMatch(/OTEL_EXPORTER_OTLP_HEADERS/);
    expect(headers).not.toContain('secret-value');
  });
});
