import type { Size } from '../browser/types.js';
import type { DisplayGeometry } from './computer-types.js';

/**
 * The largest image a model takes. For the earlier computer tool versions the API downsizes
 * images whose long edge exceeds 1568 px or whose area exceeds about 1.15 megapixels; for the
 * toolsets it refuses them. Either way a screenshot must fit, so the display the model sees
 * stays within the limits and the worker scales coordinates itself.
 */
export interface ImageLimits {
  maxEdgePx: number;
  maxPixels: number;
}

export const EARLIER_MODEL_LIMITS: ImageLimits = { maxEdgePx: 1568, maxPixels: 1_150_000 };

/** The display the model sees for a viewport, and the mapping between the two. */
export function createDisplayGeometry(viewport: Size, limits: ImageLimits = EARLIER_MODEL_LIMITS): DisplayGeometry {
  const scale = Math.min(
    1,
    limits.maxEdgePx / Math.max(viewport.width, viewport.height),
    Math.sqrt(limits.maxPixels / (viewport.width * viewport.height)),
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
