import type { Size } from '../browser/types.js';
import type { DisplayGeometry } from './action-types.js';

/**
 * The API downsizes images whose long edge exceeds 1568 px or whose area exceeds about 1.15
 * megapixels; a screenshot it shrinks no longer matches the coordinates the model clicks at.
 * So the display declared to the model stays within these limits and we scale ourselves.
 */
export const MAX_IMAGE_EDGE_PX = 1568;
export const MAX_IMAGE_PIXELS = 1_150_000;

/** The display declared to the model for a viewport, and the mapping between the two. */
export function createDisplayGeometry(viewport: Size): DisplayGeometry {
  const scale = Math.min(
    1,
    MAX_IMAGE_EDGE_PX / Math.max(viewport.width, viewport.height),
    Math.sqrt(MAX_IMAGE_PIXELS / (viewport.width * viewport.height)),
  );
  const display: Size =
    scale >= 1
      ? { ...viewport }
      : { width: Math.floor(viewport.width * scale), height: Math.floor(viewport.height * scale) };
  const sx = viewport.width / display.width;
  const sy = viewport.height / display.height;
  const clamp = (v: number, max: number) => Math.min(Math.max(v, 0), max - 1);
  return {
    display,
    viewport: { ...viewport },
    toViewport: (x, y) => ({ x: clamp(Math.round(x * sx), viewport.width), y: clamp(Math.round(y * sy), viewport.height) }),
    toDisplay: (x, y) => ({ x: clamp(Math.round(x / sx), display.width), y: clamp(Math.round(y / sy), display.height) }),
  };
}
