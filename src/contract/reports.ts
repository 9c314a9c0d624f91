/**
 * The worker's reports to the API (docs/api.md#every-call): camelCase bodies, as the service
 * description writes them. The worker sends every field (http-client.ts); the local API takes
 * them with the fields a report may leave out (`…Accepted`): an artifact's url, and the counters
 * of a run that failed before it started.
 */
import { z } from 'zod';
import { ERROR_CODES } from './errors.js';
import { HUMAN_KINDS } from './human.js';
import { count, isoTime } from './json.js';

/** The run's counters (docs/counters-and-artifacts.md#counters). */
export const counters = z.object({ nSteps: count, nAgentActions: count, nScreenshots: count });
export type Counters = z.infer<typeof counters>;

/** An artifact's reported url; null when the artifact could not be made. */
const artifactUrl = z.string().max(4096).nullable();
export const artifactUrls = z.object({ outputUrl: artifactUrl, videoUrl: artifactUrl, logsUrl: artifactUrl });
export type ArtifactUrls = z.infer<typeof artifactUrls>;

/** What both final reports end with: the run's duration, its counters and its artifacts' urls. */
export const finalFields = z.object({ durationMs: count, ...counters.shape, ...artifactUrls.shape });
export type FinalFields = z.infer<typeof finalFields>;

export const startedReport = z.object({ startedAt: isoTime });

export const completedReport = z.object({ completedAt: isoTime, ...finalFields.shape });
export type CompletedReport = z.infer<typeof completedReport>;

/** The run's error as an execution keeps it: a code, and what happened. */
export const reportedError = z.object({ code: z.string().min(1).max(100), message: z.string().max(100_000) });

/** A failed report's error: one of the documented codes (docs/api.md#error-codes), nothing else. */
const failure = z.strictObject({ code: z.enum(ERROR_CODES), message: reportedError.shape.message });

export const failedReport = z.object({ failedAt: isoTime, error: failure, ...finalFields.shape });
export type FailedReport = z.infer<typeof failedReport>;

/** The agent waits for a person (docs/human-in-the-loop.md). */
export const waitingReport = z.object({
  waitingAt: isoTime,
  kind: z.enum(HUMAN_KINDS),
  question: z.string().max(100_000),
  choices: z.array(z.string().max(1_000)).max(50).nullable(),
  timeoutAt: isoTime.nullable(),
});
export type WaitingReport = z.infer<typeof waitingReport>;

/** A person answered and the run goes on. */
export const resumedReport = z.object({ resumedAt: isoTime, answeredBy: z.string().max(200).nullable() });
export type ResumedReport = z.infer<typeof resumedReport>;

/*
 * What the API takes is closed: a field it does not know is refused (422 naming it), as the
 * service description's other bodies are, so that a misspelt counter is not silently a zero.
 */
const optionalUrls = { outputUrl: true, videoUrl: true, logsUrl: true } as const;
export const startedReportAccepted = z.strictObject(startedReport.shape);
export const completedReportAccepted = z.strictObject(completedReport.partial(optionalUrls).shape);
/** A run that failed before it started (`queued → failed`) has nothing to count yet. */
export const failedReportAccepted = z.strictObject(failedReport.partial({ durationMs: true, nSteps: true, nAgentActions: true, nScreenshots: true, ...optionalUrls }).shape);
export const waitingReportAccepted = z.strictObject(waitingReport.partial({ choices: true, timeoutAt: true }).shape);
export const resumedReportAccepted = z.strictObject(resumedReport.partial({ answeredBy: true }).shape);

/**
 * A final report kept in the worker's outbox (docs/api.md#the-outbox) until the API takes it: a
 * file one worker process writes and the next one may send.
 */
export const outboxEntry = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('completed'), executionId: z.string(), report: completedReport, storedAt: isoTime }),
  z.object({ kind: z.literal('failed'), executionId: z.string(), report: failedReport, storedAt: isoTime }),
]);
export type OutboxEntry = z.infer<typeof outboxEntry>;
