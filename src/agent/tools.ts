import type { ToolDefinition } from '../model/types.js';
import type { ComputerToolVersion, DisplayGeometry } from './action-types.js';

/** The tools offered to the model (contract §10). */
export const NAVIGATE_TOOL = 'navigate';
export const FINISH_TOOL = 'finish';
export const COMPUTER_TOOL = 'computer';

export function buildTools(options: { toolVersion: ComputerToolVersion; geometry: DisplayGeometry; zoom: boolean }): ToolDefinition[] {
  const computer: ToolDefinition = {
    type: options.toolVersion,
    name: COMPUTER_TOOL,
    display_width_px: options.geometry.display.width,
    display_height_px: options.geometry.display.height,
    ...(options.toolVersion === 'computer_20251124' && options.zoom ? { enable_zoom: true } : {}),
  };
  return [
    computer,
    {
      name: NAVIGATE_TOOL,
      description:
        'Open a URL in the current browser tab. Only the workflow\'s allowed domains can be reached; any other URL is refused with an error. Returns a screenshot of the page once it has loaded.',
      input_schema: {
        type: 'object',
        properties: { url: { type: 'string', description: 'Absolute http(s) URL to open.' } },
        required: ['url'],
        additionalProperties: false,
      },
    },
    {
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
    },
  ];
}
