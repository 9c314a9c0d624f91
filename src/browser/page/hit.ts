/**
 * The element at a point of the page, through open shadow roots and same-origin frames: a leaf
 * that the dialogs, the targets and the structure's frame checks all ask.
 */
import { frameDoc, frameOrigin, isFrame } from './dom.js';

/** The element at a point of the top window: into open shadow roots and same-origin frames. */
export function hitAt(x: number, y: number): Element | null {
  let hit = document.elementFromPoint(x, y);
  let origin = { x: 0, y: 0 };
  for (let guard = 0; hit && guard < 30; guard++) {
    if (hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x - origin.x, y - origin.y);
      if (inner && inner !== hit) {
        hit = inner;
        continue;
      }
    }
    const doc = isFrame(hit) ? frameDoc(hit) : null;
    if (doc) {
      origin = frameOrigin(doc);
      const inner = doc.elementFromPoint(x - origin.x, y - origin.y);
      if (inner) {
        hit = inner;
        continue;
      }
    }
    break;
  }
  return hit;
}
