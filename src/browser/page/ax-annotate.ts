/**
 * Hands the page structure the names read from Chromium's accessibility tree
 * (browser/ax-names.ts): called with Runtime.callFunctionOn in the structure's isolated world,
 * with the names first and the elements they belong to after them, as remote objects.
 */
import type { AxInfo } from './shapes.js';
import { STRUCTURE_KEY } from './keys.js';
import type { StructureApi } from './structure.js';

export function annotateNames(infos: AxInfo[], ...elements: Array<Node | null | undefined>): void {
  const structure = (globalThis as unknown as Record<string, StructureApi | undefined>)[STRUCTURE_KEY];
  structure?.annotate(infos, elements);
}
