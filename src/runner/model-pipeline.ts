import type { ExecutionEvents, ExecutionEventSink } from '../execution/events.js';
import type { ImageBlock, ModelClient, ModelInterceptor, ModelTurnRequest } from '../model/types.js';

/**
 * The run's model client, built here and nowhere else (docs/architecture.md#the-model-pipeline):
 * the model's own client (Claude, or a recording played back) under an ordered list of
 * interceptors, the first the outermost. For the agent's steps (and a repair's):
 *
 * 1. `tellRequests`: the images new in the request, told as `model_request` (step screenshots
 *    hear it), even for a request the meter then refuses;
 * 2. the meter (usage-meter.ts): the budget before the request, the usage after it;
 * 3. the recording (model/recording-client.ts), next to the model: the latency is the model's own.
 *
 * The final check is no step: its request goes through the same meter and recording, without the
 * first stage (steps/NNN.jpg keep the steps' numbers).
 */
export interface RunModels {
  /** The agent's, a repair's and the hand-over's client. */
  steps: ModelClient;
  /** The final check's. */
  check: ModelClient;
}

export function runModels(base: ModelClient, stages: { record: ModelInterceptor; meter: ModelInterceptor; events: Pick<ExecutionEventSink, 'notify' | 'hasSubscribers'> }): RunModels {
  const { record, meter } = stages;
  return {
    steps: composeModel(base, [tellRequests(stages.events), meter, record]),
    check: composeModel(base, [meter, record]),
  };
}

/** `base` under `interceptors`, the first the outermost: each hands the request on to the next, the last to `base`. */
export function composeModel(base: ModelClient, interceptors: readonly ModelInterceptor[]): ModelClient {
  let next: ModelClient['createTurn'] = (request, signal) => base.createTurn(request, signal);
  for (const intercept of [...interceptors].reverse()) {
    const inner = next;
    next = (request, signal) => intercept(request, signal, inner);
  }
  return { createTurn: next };
}

type ShownImage = ExecutionEvents['model_request']['images'][number];

/**
 * Tells `model_request` with the images new in each request: those of its newest user message
 * (the screenshots taken since the last turn). A resumed turn (pause_turn) sends the conversation
 * again unchanged, and a request without images tells nothing. The images are decoded only while
 * something hears the event.
 */
export function tellRequests(events: Pick<ExecutionEventSink, 'notify' | 'hasSubscribers'>): ModelInterceptor {
  return (request, signal, next) => {
    if (events.hasSubscribers('model_request')) {
      const images = newestImages(request);
      if (images.length > 0) events.notify('model_request', { images: images.map(shown) });
    }
    return next(request, signal);
  };
}

function newestImages(request: ModelTurnRequest): ImageBlock[] {
  const newest = request.messages[request.messages.length - 1];
  if (!newest || newest.role !== 'user') return [];
  const images: ImageBlock[] = [];
  for (const block of newest.content) {
    if (block.type === 'image') images.push(block);
    else if (block.type === 'tool_result') for (const inner of block.content) if (inner.type === 'image') images.push(inner);
  }
  return images;
}

const shown = (image: ImageBlock): ShownImage => ({ mediaType: image.source.media_type, data: Buffer.from(image.source.data, 'base64') });
