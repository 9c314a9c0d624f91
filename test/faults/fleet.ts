import { randomUUID } from 'node:crypto';
import type { DaemonProcess } from '../support/daemon-process.js';
import { listProcesses } from '../support/processes.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, type CaseScript, type FaultRig } from './harness.js';

/**
 * A fleet of workers under faults, shared by the suite's small fleet test and `npm run chaos`:
 * short marked executions, the tally of what the API was told about each, and the check that
 * no Chromium or ffmpeg outlived the workers that started them.
 */

export const FLEET_CASE = 'fleet';

/** One click, then done. Turn 0 is answered only once `gate` settles (the test holds runs in flight). */
export function fleetCase(gate: Promise<unknown> = Promise.resolve()): CaseScript {
  return (turn) => (turn === 0 ? { ...browser('left_click', { target: { type: 'coordinate', x: 100, y: 100 } }), until: gate } : finish('completed', { ok: true }));
}

/** Enqueues `n` executions whose prompts carry their id (`[exec:ID]`), so model requests can be told apart. */
export async function enqueueMarked(rig: FaultRig, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const executionId = randomUUID();
    const specification = rig.spec(FLEET_CASE, { prompt: `[case:${FLEET_CASE}] [exec:${executionId}] Click once, then report.` });
    await rig.queue.add('execute', { executionId, workflowId: 'wf-fleet', workflowVersionId: 'v-1', inputPayload: {}, specification }, { jobId: executionId });
    ids.push(executionId);
  }
  return ids;
}

export interface FleetTally {
  /** By final report: `completed`, or the error code of `failed`. */
  outcomes: Record<string, number>;
  /** Executions without a final report. */
  missing: string[];
  /** Executions with more than one final report. */
  reportedTwice: string[];
  /** Executions reported `started` more than once. */
  startedTwice: string[];
  /** Executions that asked the model something after their final report. */
  ranAfterEnd: string[];
}

export function tally(rig: FaultRig, ids: readonly string[]): FleetTally {
  const result: FleetTally = { outcomes: {}, missing: [], reportedTwice: [], startedTwice: [], ranAfterEnd: [] };
  const requestsById = new Map<string, number[]>();
  for (const request of rig.model.requests) {
    const id = /\[exec:([\w-]+)\]/.exec(request.rawBody)?.[1];
    if (id) requestsById.set(id, [...(requestsById.get(id) ?? []), request.receivedAt]);
  }
  for (const id of ids) {
    const { started, finals } = callsOf(rig.api, id);
    if (started.length > 1) result.startedTwice.push(id);
    if (finals.length === 0) {
      result.missing.push(id);
      continue;
    }
    if (finals.length > 1) result.reportedTwice.push(id);
    const final = finals[0]!;
    const outcome = final.path.endsWith('/completed') ? 'completed' : String((final.body as { error?: { code?: string } }).error?.code ?? 'failed');
    result.outcomes[outcome] = (result.outcomes[outcome] ?? 0) + 1;
    if ((requestsById.get(id) ?? []).some((at) => at > final.at)) result.ranAfterEnd.push(id);
  }
  return result;
}

/** Chromium and ffmpeg processes a worker runs now, to be checked after it is gone. */
export function browserAndEncoderPids(worker: DaemonProcess): Map<number, string> {
  const mine = new Set(worker.descendants());
  return new Map(listProcesses().filter((p) => mine.has(p.pid) && /chrom|headless|ffmpeg/i.test(p.comm)).map((p) => [p.pid, p.comm]));
}

/** Of the processes recorded, those still alive (same pid and name, not a zombie). */
export function stillAlive(recorded: Map<number, string>): number[] {
  const now = new Map(listProcesses().filter((p) => p.state !== 'Z').map((p) => [p.pid, p.comm]));
  return [...recorded].filter(([pid, comm]) => now.get(pid) === comm).map(([pid]) => pid);
}
