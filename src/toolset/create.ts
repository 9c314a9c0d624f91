/** The action space an execution's choice names, on its browser session. */
import { isToolsetType } from '../domain/action-spaces.js';
import { createBrowserToolset } from './browser-toolset.js';
import { createComputerTool } from './computer-tool.js';
import { createComputerToolset } from './computer-toolset.js';
import { createDisplayGeometry } from './display.js';
import type { ActionSpace, ActionSpaceChoice, ActionSpaceOptions } from './types.js';

export function createActionSpace(choice: ActionSpaceChoice, options: ActionSpaceOptions): ActionSpace {
  const geometry = createDisplayGeometry(options.session.viewport, choice.images);
  if (choice.kind === 'browser') return createBrowserToolset({ ...options, geometry });
  const { computer } = choice;
  if (isToolsetType(computer.type)) return createComputerToolset({ ...options, geometry });
  return createComputerTool({ ...options, geometry, version: computer.type, beta: computer.beta ?? '', zoom: computer.zoom });
}
