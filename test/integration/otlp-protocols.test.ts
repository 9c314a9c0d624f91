import { afterAll, describe, expect, it } from 'vitest';
import { tracingSettingsSchema } from '../../src/config/tracing.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startTracing } from '../../src/tracing/start.js';
import { startOtlpGrpcReceiver, startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

/**
 * Each OTLP protocol the worker exports with (docs/configuration.md#traces), through
 * OpenTelemetry's own exporter to a receiver that decodes what it sends: the span, its parent
 * and attributes, the headers of OTEL_EXPORTER_OTLP_HEADERS, gzip when asked, and the last spans
 * exported by the shutdown.
 */

const receivers: OtlpReceiver[] = [];
afterAll(async () => {
  await Promise.allSettled(receivers.map((r) => r.close()));
});

describe.each([
  { protocol: 'http/protobuf', compression: 'none', start: startOtlpReceiver },
  { protocol: 'http/json', compression: 'gzip', start: startOtlpReceiver },
  { protocol: 'grpc', compression: 'none', start: startOtlpGrpcReceiver },
] as const)('OTLP over $protocol ($compression)', ({ protocol, compression, start }) => {
  it('exports the spans, their parent and attributes, with the configured headers', async () => {
    const receiver = await start();
    receivers.push(receiver);
    const settings = tracingSettingsSchema.parse({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_COMPRESSION: compression,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-team=traces,authorization=Bearer%20t0ken',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    });
    const tracing = await startTracing(settings, { serviceName: 'protocol-probe', logger: createSilentLogger() });
    expect(tracing.enabled).toBe(true);
    await tracing.inSpan('outer', { attributes: { 'probe.count': 3, 'probe.names': ['a', 'b'], 'probe.flag': true } }, async (outer) => {
      outer.addEvent('halfway', { 'probe.at': 'middle' });
      await tracing.inSpan('inner', { kind: 'client' }, async (inner) => inner.fail('probe_failed', 'on purpose'));
    });
    // The shutdown exports what is left.
    await tracing.shutdown();
    const spans = await receiver.waitFor((all) => all.length >= 2);
    const outer = spans.find((s) => s.name === 'outer')!;
    const inner = spans.find((s) => s.name === 'inner')!;
    expect(inner).toMatchObject({ traceId: outer.traceId, parentSpanId: outer.spanId, kind: 3, status: { code: 2, message: 'on purpose' } });
    expect(inner.attributes['error.type']).toBe('probe_failed');
    expect(outer.attributes).toMatchObject({ 'probe.count': 3, 'probe.names': ['a', 'b'], 'probe.flag': true });
    expect(outer.events).toEqual([expect.objectContaining({ name: 'halfway', attributes: { 'probe.at': 'middle' } })]);
    expect(outer.resource).toMatchObject({ 'service.name': 'protocol-probe', 'deployment.environment.name': 'test' });
    expect(outer.scope).toBe('execution-worker');
    const [sent] = receiver.exports;
    expect(sent!.protocol).toBe(protocol);
    expect(sent!.headers['x-team']).toBe('traces');
    expect(sent!.headers.authorization).toBe('Bearer t0ken');
    if (protocol !== 'grpc') expect(sent!.path).toBe('/v1/traces');
    if (compression === 'gzip') expect(sent!.headers['content-encoding']).toBe('gzip');
  });
});
