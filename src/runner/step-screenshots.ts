import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ImageBlock } from '../model/types.js';
import type { Logger } from '../telemetry/types.js';
import { STEP_EVENTS, type ExecutionEvents, type ExecutionEventSink, type ExecutionEventSource } from '../execution/events.js';

/**
 * What the model saw at each step, kept as artifacts (`steps/NNN.jpg`, docs/counters-and-artifacts.md#stepsnnnjpg) without
 * touching the agent loop or the model client: a subscriber of the execution's events. The
 * model pipeline (model-pipeline.ts) tells each step's request as `model_request`, with the
 * images new in it — the screenshots taken since the last turn, top-level or inside tool
 * results —, and they are written as the step's screenshots, the very bytes the model got.
 *
 * The step of a request is one past the highest step of the execution's events so far (the
 * typed `step` field of the events that have one, `STEP_EVENTS`): steps replayed from a run cache
 * make no model call, yet the next model step still gets its right number. One image: `NNN.ext`;
 * several: `NNN-1.ext` … `NNN-K.ext`, the extension by media type (JPEG `.jpg`, PNG `.png`). Each stored image is a `step_screenshot` event (step, key,
 * bytes) in logs.jsonl, dated when the request went out, so the dashboard ties it to its step.
 *
 * The request is never held up: the files are written after it has been handed on, and
 * `files()` waits for them before the upload.
 */

export interface StepScreenshotFile {
  /** Artifact name relative to the execution's folder: `steps/003.jpg`. */
  name: string;
  path: string;
  contentType: string;
}

export interface StepScreenshots {
  /** Every screenshot stored so far, once written (a failed write is logged and left out). */
  files(): Promise<StepScreenshotFile[]>;
}

/** Folder of the step screenshots, inside the execution's scratch folder and its artifacts. */
export const STEPS_FOLDER = 'steps';

const EXTENSIONS: Record<ImageBlock['source']['media_type'], string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
};

export function createStepScreenshots(options: { dir: string; events: Pick<ExecutionEventSink, 'emit'> & Pick<ExecutionEventSource, 'on'>; logger: Logger }): StepScreenshots {
  let lastStep = 0;
  for (const type of STEP_EVENTS) {
    options.events.on(type, ({ step }) => {
      if (step > lastStep) lastStep = step;
    });
  }
  const written: Array<Promise<StepScreenshotFile | undefined>> = [];
  let folder: Promise<unknown> | undefined;

  const store = (name: string, image: ShownImage): void => {
    const file = path.join(options.dir, name);
    const contentType = image.mediaType;
    // Writing waits for the next turn of the event loop: the request goes first.
    written.push(
      new Promise<StepScreenshotFile | undefined>((resolve) => {
        setImmediate(() => {
          folder ??= mkdir(path.join(options.dir, STEPS_FOLDER), { recursive: true });
          folder
            .then(() => writeFile(file, image.data))
            .then(
              () => resolve({ name, path: file, contentType }),
              (error: unknown) => {
                options.logger.warn({ err: error, name }, 'step screenshot could not be written');
                resolve(undefined);
              },
            );
        });
      }),
    );
  };

  options.events.on('model_request', ({ images }) => {
    const step = lastStep + 1;
    const stem = String(step).padStart(3, '0');
    images.forEach((image, i) => {
      const name = `${STEPS_FOLDER}/${stem}${images.length > 1 ? `-${i + 1}` : ''}.${EXTENSIONS[image.mediaType]}`;
      options.events.emit('step_screenshot', { step, key: name, bytes: image.data.length, mediaType: image.mediaType });
      store(name, image);
    });
  });

  return {
    async files() {
      const all = await Promise.all(written);
      return all.filter((f): f is StepScreenshotFile => f !== undefined);
    },
  };
}

type ShownImage = ExecutionEvents['model_request']['images'][number];
