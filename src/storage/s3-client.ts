import { S3Client } from '@aws-sdk/client-s3';

/** How the worker talks to S3 (S3_ENDPOINT, S3_REGION, S3_FORCE_PATH_STYLE), shared by its uses. */
export interface S3ClientOptions {
  /** S3-compatible endpoint; none means AWS. */
  endpoint?: string;
  region: string;
  forcePathStyle: boolean;
  /** Tries per request, first included. */
  maxAttempts: number;
  /** Explicit credentials (tests); none means the standard AWS provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

export function createS3Client(opts: S3ClientOptions): S3Client {
  return new S3Client({
    region: opts.region,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    forcePathStyle: opts.forcePathStyle,
    maxAttempts: opts.maxAttempts,
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    // S3-compatible servers often reject the flexible checksums (aws-chunked trailers) that
    // the SDK sends to AWS by default; send them only where an operation requires one.
    ...(opts.endpoint ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
  });
}

/** `Name (status N): message` of an SDK error, for logs and failure reasons. */
export function s3ErrorMessage(error: unknown): string {
  if (error instanceof Error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    return status ? `${error.name} (status ${status}): ${error.message}` : `${error.name}: ${error.message}`;
  }
  return String(error);
}
