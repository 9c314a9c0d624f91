import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { usageReport } from '../domain/usage.js';
import { ARTIFACT_FILES, uploadArtifacts, uploadDownloads, writeJson, type ArtifactKind } from './artifacts.js';
import type { ExecutionContext, RunEnd } from './execution.js';
import type { ExecutionSummary } from './types.js';
import type { CompletedReport, FailedReport } from '../contract/reports.js';
import type { OutputDocument, SavedDownload } from '../contract/output.js';

/**
 * The finalise phase, in a fixed order whatever happened before it: the downloads are uploaded,
 * the last event is logged and logs.jsonl closed, output.json, recording.json and steps.vtt
 * written, the artifacts uploaded, then the report sent (docs/api.md), and only then are viewers
 * told the run is over. The browser is closed already (the browser phase's scope).
 */
export async function finalise(ctx: ExecutionContext, run: RunEnd): Promise<ExecutionSummary> {
  const { deps, job, events, log, now } = ctx;
  const { outcome, counters: stats, video } = run;
  const vault = ctx.secrets.vault;
  const durationMs = run.startedAtMs === undefined ? 0 : Math.max(0, run.endedAtMs - run.startedAtMs);
  const downloadUrls = await uploadDownloads({ store: deps.store, executionId: job.executionId, downloads: run.downloads, logger: log });
  const downloads: SavedDownload[] = run.downloads.map(({ path: _file, ...saved }, i) => ({ ...saved, artifactUrl: downloadUrls[i] ?? null }));
  const document: OutputDocument = {
    status: outcome.status,
    output: outcome.status === 'completed' ? vault.redactValue(outcome.output) : null,
    error: outcome.status === 'failed' ? { code: outcome.code, message: vault.redact(outcome.message) } : null,
    counters: { nSteps: stats.nSteps, nAgentActions: stats.nAgentActions, nScreenshots: stats.nScreenshots, durationMs },
    usage: usageReport(stats.usage, stats.costUsd, stats.models),
    budget: { tokens: run.budget?.tokens ?? null, usd: run.budget?.usd ?? null },
    downloads: vault.redactValue(downloads),
    cache: { ...run.cache, modelSteps: run.cache.used ? run.cache.modelSteps : stats.nSteps },
    human: vault.redactValue(run.human.map((exchange) => ({ ...exchange }))),
    ...(run.profile ? { profile: run.profile } : {}),
    ...(deps.playback ? { playback: { recording: deps.playback.recording, reason: deps.playback.reason } } : {}),
    ...(run.limits?.length ? { limits: vault.redactValue(run.limits.map((reached) => ({ ...reached }))) } : {}),
  };
  events.emit(outcome.status === 'completed' ? 'execution_completed' : 'execution_failed', {
    ...(document.error ?? {}),
    counters: document.counters,
    usage: document.usage,
    video: video ? { durationMs: video.durationMs, frames: video.frames, droppedFrames: video.droppedFrames } : null,
  });
  await ctx.eventLog.close();

  const files: Partial<Record<ArtifactKind, string>> = { logs: ctx.eventLog.path };
  try {
    files.output = await writeJson(ctx.workDir, ARTIFACT_FILES.output.name, document);
    if (run.recording) files.recording = await writeJson(ctx.workDir, ARTIFACT_FILES.recording.name, vault.redactValue(run.recording()));
    if (video) files.video = video.path;
    if (run.stepsVtt !== null && video) {
      files.steps = path.join(ctx.workDir, ARTIFACT_FILES.steps.name);
      // Labels were redacted as they were marked; the whole track passes once more (cue escaping).
      await writeFile(files.steps, vault.redact(run.stepsVtt));
    }
  } catch (error) {
    log.error({ err: String(error) }, 'could not write artifacts');
  }
  const extras = (await ctx.stepShots?.files()) ?? [];
  const uploaded = await uploadArtifacts({ store: deps.store, executionId: job.executionId, files, extras, logger: log });
  const urls = { outputUrl: uploaded.output, videoUrl: uploaded.video, logsUrl: uploaded.logs };

  let reported = false;
  if (deps.controlPlane) {
    const counters = { nSteps: stats.nSteps, nAgentActions: stats.nAgentActions, nScreenshots: stats.nScreenshots };
    const at = new Date(now()).toISOString();
    try {
      if (outcome.status === 'completed') {
        const report: CompletedReport = { completedAt: at, durationMs, ...counters, ...urls };
        await deps.controlPlane.reportCompleted(job.executionId, report);
      } else {
        const report: FailedReport = { failedAt: at, error: document.error!, durationMs, ...counters, ...urls };
        await deps.controlPlane.reportFailed(job.executionId, report);
      }
      reported = true;
    } catch (error) {
      log.error({ err: String(error), status: outcome.status }, 'final report could not be delivered');
    }
  }
  // Viewers learn the run is over once its report is in: the dashboard then loads the artifacts.
  ctx.live?.close();
  log.info({ status: outcome.status, code: document.error?.code, ...document.counters, reported }, `execution ${outcome.status}`);
  return { status: outcome.status, executionId: job.executionId, document, urls, reported, maskedInput: vault.maskedPayload };
}
