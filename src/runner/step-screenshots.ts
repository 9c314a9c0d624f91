import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ImageBlock, ModelClient, ModelTurnRequest } from '../model/types.js';
import type { Logger } from '../telemetry/types.js';
import { STEP_EVENTS, type ExecutionEventSink, type ExecutionEventSource } from '../execution/events.js';

/**
 * What the model saw at each step, kept as artifacts (`steps/NNN.jpg`, docs/counters-and-artifacts.md#stepsnnnjpg) without
 * touching the agent loop: the execution's model client is wrapped, and the images of the
 * newest user message of each request — the screenshots taken since the last turn, top-level
 * or inside tool results — are written as the step's screenshots, the very bytes the model got.
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
  /** The model client to give the agent: `inner`, storing what each request shows. */
  wrap(inner: ModelClient): ModelClient;
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

  const store = (name: string, image: ImageBlock): void => {
    const file = path.join(options.dir, name);
    const contentType = image.source.media_type;
    // Decoding and writing wait for the next turn of the event loop: the request goes first.
    written.push(
      new Promise<StepScreenshotFile | undefined>((resolve) => {
        setImmediate(() => {
          folder ??= mkdir(path.join(options.dir, STEPS_FOLDER), { recursive: true });
          folder
            .then(() => writeFile(file, Buffer.from(image.source.data, 'base64')))
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

  const record = (request: ModelTurnRequest): void => {
    const newest = request.messages[request.messages.length - 1];
    // A resumed turn (pause_turn) re-sends the conversation unchanged: nothing new to see.
    if (!newest || newest.role !== 'user') return;
    const images = newestImages(newest.content);
    if (images.length === 0) return;
    const step = lastStep + 1;
    const stem = String(step).padStart(3, '0');
    images.forEach((image, i) => {
      const name = `${STEPS_FOLDER}/${stem}${images.length > 1 ? `-${i + 1}` : ''}.${EXTENSIONS[image.source.media_type]}`;
      // Base64 length → byte count, without decoding now.
      const data = image.source.data;
      const bytes = Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
      options.events.emit('step_screenshot', { step, key: name, bytes, mediaType: image.source.media_type });
      store(name, image);
    });
  };

  return {
    wrap(inner) {
      return {
        createTurn(request, signal) {
          record(request);
          return inner.createTurn(request, signal);
        },
      };
    },
    async files() {
      const all = await Promise.all(written);
      return all.filter((f): f is StepScreenshotFile => f !== undefined);
    },
  };
}

function newestImages(content: Extract<ModelTurnRequest['messages'][number], { role: 'user' }>['content']): ImageBlock[] {
  const images: ImageBlock[] = [];
  for (const block of content) {
    if (block.type === 'image') images.push(block);
    else if (block.type === 'tool_result') for (const inner of block.content) if (inner.type === 'image') images.push(inner);
  }
  return images;
}
