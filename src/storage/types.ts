import type { OpenedFile } from '../domain/input-files.js';

/**
 * The artifact store port (docs/counters-and-artifacts.md#artifacts). Keys are relative to the execution's folder:
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
 * Reads objects of S3 (or an S3-compatible server) for input files (docs/files-and-codes.md), with the
 * worker's own S3 client settings, whatever stores the artifacts.
 */
export interface ObjectReader {
  /** Opens `s3://bucket/key`; a missing or unreadable object is a reason, not an exception. */
  open(bucket: string, key: string, signal: AbortSignal): Promise<OpenedFile>;
}

/** A stored profile blob, as listed (no content). */
export interface ProfileBlobInfo {
  id: string;
  bytes: number;
  /** ISO time the store last wrote it. */
  updatedAt: string;
}

/**
 * Where browser profiles' encrypted blobs are kept (docs/profiles.md): `{S3_PREFIX}profiles/{id}`
 * in the artifact store's bucket or folder. The store sees bytes only, never a clear value.
 */
export interface ProfileStore {
  /** The blob, or undefined when there is none. */
  read(id: string, signal?: AbortSignal): Promise<Buffer | undefined>;
  /** Replaces the blob at once: a reader sees the old bytes or the new, never a mix. */
  write(id: string, blob: Buffer, signal?: AbortSignal): Promise<void>;
  /** False when there was none. */
  delete(id: string): Promise<boolean>;
  list(signal?: AbortSignal): Promise<ProfileBlobInfo[]>;
}
