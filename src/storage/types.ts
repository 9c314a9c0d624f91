import type { OpenedFile } from '../domain/input-files.js';

/**
 * The artifact store port (contract §5). Keys are relative to the execution's folder:
 * `{S3_PREFIX}executions/{executionId}/{name}`.
 */

export type ArtifactBody = { kind: 'buffer'; data: Buffer | string } | { kind: 'file'; path: string };

export interface StoredArtifact {
  /** Full object key (or path relative to ARTIFACTS_DIR). */
  key: string;
  /** The url to report: ARTIFACT_BASE_URL + key when set, else the S3 or file:// url. */
  url: string;
  bytes: number;
}

export interface ArtifactStore {
  put(executionId: string, name: string, body: ArtifactBody, contentType: string, signal?: AbortSignal): Promise<StoredArtifact>;
  /** Reachability check for readiness. */
  checkReady?(signal: AbortSignal): Promise<void>;
}

/**
 * Reads objects of S3 (or an S3-compatible server) for input files (contract §12), with the
 * worker's own S3 client settings, whatever stores the artifacts.
 */
export interface ObjectReader {
  /** Opens `s3://bucket/key`; a missing or unreadable object is a reason, not an exception. */
  open(bucket: string, key: string, signal: AbortSignal): Promise<OpenedFile>;
}
