import type { Tracing } from '../telemetry/types.js';
import type { ArtifactStore } from './types.js';

/**
 * Each upload of an artifact as a span of the execution's trace (docs/operations.md#traces), a
 * child of whatever uploads it (the finalise phase): which artifact, its type and size, where it
 * went, or why it failed. Around any store (S3, the local folder, the spool), so each is seen alike.
 */
export function withUploadSpans(store: ArtifactStore, tracing: Tracing): ArtifactStore {
  if (!tracing.enabled) return store;
  return {
    put: (executionId, name, body, contentType, signal) =>
      tracing.inSpan('upload', { kind: 'client', attributes: { 'artifact.name': name, 'artifact.content_type': contentType } }, async (span) => {
        const stored = await store.put(executionId, name, body, contentType, signal);
        span.setAttributes({ 'artifact.key': stored.key, 'artifact.bytes': stored.bytes });
        return stored;
      }),
    ...(store.checkReady ? { checkReady: (signal: AbortSignal) => store.checkReady!(signal) } : {}),
  };
}
