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
