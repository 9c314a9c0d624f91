/**
 * Reads the FLV stream the shared encoder writes on its stdout (pure, no I/O): H.264 access
 * units with their times, as they come (docs/operations.md#shared-video-encoder).
 *
 * Why FLV and by hand: it is the simplest timestamped container ffmpeg writes to a pipe packet
 * by packet, and it already carries H.264 the way MP4 does (the decoder configuration record,
 * `avcC`, then length-prefixed NAL units), so nothing is converted on the way to the MP4. The
 * format is a 13-byte header and then tags of a fixed 11-byte header; npm's FLV packages are
 * browser players, not stream readers, so the twenty lines below are ours.
 */

export type FlvVideoItem =
  /** The decoder configuration record (`avcC`) for the frames that follow. */
  | { kind: 'config'; avcc: Buffer }
  /** One access unit: its time in ms on the stream, whether it is a keyframe, its NAL units (length-prefixed). */
  | { kind: 'frame'; ptsMs: number; key: boolean; data: Buffer };

const FILE_HEADER_BYTES = 13;
const TAG_HEADER_BYTES = 11;
const VIDEO_TAG = 9;
const AVC_CODEC = 7;

export function createFlvReader(): (chunk: Buffer) => FlvVideoItem[] {
  let buffer: Buffer = Buffer.alloc(0);
  let headerSkipped = false;
  return (chunk) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    const items: FlvVideoItem[] = [];
    if (!headerSkipped) {
      if (buffer.length < FILE_HEADER_BYTES) return items;
      if (buffer.toString('latin1', 0, 3) !== 'FLV') throw new Error('the encoder output is not an FLV stream');
      buffer = buffer.subarray(FILE_HEADER_BYTES);
      headerSkipped = true;
    }
    // Each tag: type, 24-bit size, 24-bit time + 8 high bits, 24-bit stream id, body, 32-bit back-pointer.
    while (buffer.length >= TAG_HEADER_BYTES) {
      const size = buffer.readUIntBE(1, 3);
      if (buffer.length < TAG_HEADER_BYTES + size + 4) break;
      const dtsMs = (buffer.readUIntBE(4, 3) + buffer[7]! * 0x1000000) >>> 0;
      const body = buffer.subarray(TAG_HEADER_BYTES, TAG_HEADER_BYTES + size);
      if (buffer[0] === VIDEO_TAG && body.length >= 5 && (body[0]! & 0x0f) === AVC_CODEC) {
        const payload = Buffer.from(body.subarray(5));
        if (body[1] === 0) items.push({ kind: 'config', avcc: payload });
        else if (body[1] === 1) items.push({ kind: 'frame', ptsMs: dtsMs + body.readIntBE(2, 3), key: body[0]! >> 4 === 1, data: payload });
      }
      buffer = buffer.subarray(TAG_HEADER_BYTES + size + 4);
    }
    return items;
  };
}
