/**
 * The smallest Matroska stream that carries JPEG frames with their own timestamps to ffmpeg's
 * stdin (pure, no I/O): a header, then one cluster per frame.
 *
 * Why a container at all: a bare JPEG pipe (image2pipe) has no timestamps, so every slot of
 * a constant-rate timeline had to be sent, decoded and encoded, though a page is still most of
 * the time. With a timestamp per frame, only the frames that change the picture (and those a
 * click marker needs) are sent; each one lasts until the next, and the video stays on the wall
 * clock. Matroska is the simplest container ffmpeg reads from a pipe as it comes: EBML
 * elements, sizes known up front, and a segment of unknown length (a live stream).
 */

/** Milliseconds per timestamp tick: frame times are whole milliseconds. */
const TIMESTAMP_SCALE_NS = 1_000_000;
/** "Size unknown" for the segment, which ends when the stream does. */
const UNKNOWN_SIZE = Buffer.from([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

/** The stream's first bytes: EBML header, segment start, segment info, the one video track. */
export function mkvHeader(options: { width: number; height: number; frameDurationMs: number }): Buffer {
  const ebml = element(0x1a45dfa3, [
    uintElement(0x4286, 1), // EBMLVersion
    uintElement(0x42f7, 1), // EBMLReadVersion
    uintElement(0x42f2, 4), // EBMLMaxIDLength
    uintElement(0x42f3, 8), // EBMLMaxSizeLength
    stringElement(0x4282, 'matroska'), // DocType
    uintElement(0x4287, 4), // DocTypeVersion
    uintElement(0x4285, 2), // DocTypeReadVersion
  ]);
  const info = element(0x1549a966, [uintElement(0x2ad7b1, TIMESTAMP_SCALE_NS), stringElement(0x4d80, 'execution-worker'), stringElement(0x5741, 'execution-worker')]);
  const video = element(0xe0, [uintElement(0xb0, options.width), uintElement(0xba, options.height)]);
  const track = element(0xae, [
    uintElement(0xd7, 1), // TrackNumber
    uintElement(0x73c5, 1), // TrackUID
    uintElement(0x83, 1), // TrackType: video
    stringElement(0x86, 'V_MJPEG'), // CodecID
    // How long a frame lasts when nothing follows it: the last one of the stream.
    uintElement(0x23e383, Math.round(options.frameDurationMs * 1_000_000)), // DefaultDuration (ns)
    video,
  ]);
  const tracks = element(0x1654ae6b, [track]);
  return Buffer.concat([ebml, id(0x18538067), UNKNOWN_SIZE, info, tracks]);
}

/** One frame at `timestampMs` (≥ 0, from the stream's start), as a cluster of its own. */
export function mkvFrame(jpeg: Buffer, timestampMs: number): Buffer {
  // SimpleBlock: track number 1 (as a size-coded integer), timestamp relative to the cluster
  // (0), flags: a keyframe (every JPEG stands alone).
  const blockHeader = Buffer.from([0x81, 0x00, 0x00, 0x80]);
  const block = Buffer.concat([id(0xa3), size(blockHeader.length + jpeg.length), blockHeader]);
  const timestamp = uintElement(0xe7, Math.max(0, Math.round(timestampMs)));
  return Buffer.concat([id(0x1f43b675), size(timestamp.length + block.length + jpeg.length), timestamp, block, jpeg]);
}

function element(elementId: number, children: Buffer[]): Buffer {
  const body = Buffer.concat(children);
  return Buffer.concat([id(elementId), size(body.length), body]);
}

function uintElement(elementId: number, value: number): Buffer {
  const bytes: number[] = [];
  for (let v = value; bytes.length === 0 || v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.concat([id(elementId), size(bytes.length), Buffer.from(bytes)]);
}

function stringElement(elementId: number, value: string): Buffer {
  const body = Buffer.from(value, 'utf8');
  return Buffer.concat([id(elementId), size(body.length), body]);
}

/** An element ID is written as is: its leading bits already say its length. */
function id(elementId: number): Buffer {
  const bytes: number[] = [];
  for (let v = elementId; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from(bytes);
}

/** A data size as an EBML variable-length integer, 8 bytes (room for any frame). */
function size(length: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeUInt8(0x01, 0);
  out.writeUIntBE(length, 2, 6);
  return out;
}
