import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { s3Credentials } from '../support/s3.js';
import { browser, finish } from '../support/scripted-model-server.js';
import { callsOf, onlyFinal, startRig, type FaultRig } from './harness.js';
import { startStoppableS3, type StoppableS3 } from './stoppable-s3.js';

/**
 * S3 goes away as the run ends: the report is not held back (it goes out with null urls after
 * the client's bounded retries, and this is logged); what was recorded stays in the local
 * spool, is retried, survives a worker restart, and is uploaded once S3 is back.
 */

let rig: FaultRig;
let s3: StoppableS3;

beforeAll(async () => {
  s3 = await startStoppableS3();
  rig = await startRig('s3', {
    upload: (turn) => {
      if (turn === 0) return browser('left_click', { target: { type: 'coordinate', x: 200, y: 150 } });
      // The model's last answer takes storage down: every upload of this run finds it gone.
      void s3.stop();
      return finish('completed', { stored: 'later' });
    },
  });
});
afterEach(stopAllDaemons);
afterAll(async () => {
  await Promise.allSettled([rig?.close(), s3?.close()]);
});

/** Files (not folders) waiting in an execution's spool, with their sub-folder: `steps/001.jpg`. */
async function spooledFiles(executionId: string): Promise<string[]> {
  const entries = await readdir(`${rig.tmp}/work/spool/${executionId}`, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(`${rig.tmp}/work/spool/${executionId}`, path.join(e.parentPath, e.name)));
}

describe('a storage outage at upload time', () => {
  it('reports with null urls, keeps the artifacts on disk, and uploads them once S3 is back (after a restart too)', async () => {
    const workDir = `${rig.tmp}/work`;
    const env = {
      WORKER_CONCURRENCY: '1',
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      S3_PREFIX: 'faults',
      AWS_ACCESS_KEY_ID: s3Credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3Credentials.secretAccessKey,
      UPLOAD_RETRY_INTERVAL_MS: '500',
    };
    const first = await rig.startWorker('s3-down', workDir, env);
    const executionId = await rig.enqueue('upload');

    const report = await rig.api.waitForFinal(executionId);
    expect(report.path).toMatch(/\/completed$/);
    expect(report.body).toMatchObject({ outputUrl: null, videoUrl: null, logsUrl: null, nSteps: 2, nAgentActions: 1 });
    const spooled = first.find('artifact upload failed; kept locally for a later upload, reported with a null url').map((l) => l.artifact as string);
    expect(spooled.sort()).toEqual(expect.arrayContaining(['logs.jsonl', 'output.json', 'recording.json', 'video.mp4']));
    // Retried in the background while S3 stays away.
    await first.waitForLog((l) => l.msg === 'spooled artifact still not uploaded' && l.executionId === executionId);

    first.signal('SIGTERM');
    expect(await first.exited, first.tail()).toEqual({ code: 0, signal: null });
    // Step screenshots (steps/NNN.jpg) are spooled like the rest.
    expect(spooled.filter((name) => name.startsWith('steps/')).length).toBeGreaterThan(0);
    expect((await spooledFiles(executionId)).filter((f) => !f.endsWith('.meta.json')).sort()).toEqual([...spooled].sort());

    await s3.start();
    const second = await rig.startWorker('s3-back', workDir, env);
    await second.waitForLog('artifacts left by an earlier run will be uploaded');
    for (const name of spooled) await second.waitForLog((l) => l.msg === 'spooled artifact uploaded' && l.artifact === name);

    const prefix = `faults/executions/${executionId}/`;
    const output = JSON.parse((await s3.object(`${prefix}output.json`))!.toString()) as Record<string, unknown>;
    expect(output).toMatchObject({ status: 'completed', output: { stored: 'later' } });
    const logs = (await s3.object(`${prefix}logs.jsonl`))!.toString();
    expect(logs).toContain('execution_completed');
    expect((await s3.object(`${prefix}video.mp4`))!.subarray(4, 8).toString()).toBe('ftyp');
    expect(await s3.object(`${prefix}recording.json`)).toBeDefined();
    expect(await s3.object(`${prefix}steps/001.jpg`)).toBeDefined();
    expect(await spooledFiles(executionId)).toEqual([]);

    // One run, one report: the late uploads do not report again.
    expect(onlyFinal(rig.api, executionId).kind).toBe('completed');
    expect(callsOf(rig.api, executionId).started).toHaveLength(1);
  });
});
