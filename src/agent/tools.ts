import type { ToolDefinition } from '../model/types.js';

/** Our own tool, beside whichever action space the model acts with (docs/action-spaces.md). */
export const FINISH_TOOL = 'finish';

export const FINISH_DEFINITION: ToolDefinition = {
  name: FINISH_TOOL,
  description:
    'End the task. Call it exactly once, when the task is done (status "completed", with the requested output) or when it cannot be done (status "failed", with the reason). Nothing runs after it.',
  input_schema: {
    type: 'object',
    properties: {
      status: { type: 'string', enum: ['completed', 'failed'] },
      output: { description: 'The result the task asks for (any JSON value).' },
      reason: { type: 'string', description: 'Why the task failed, or a short summary.' },
    },
    required: ['status'],
    additionalProperties: false,
  },
};
