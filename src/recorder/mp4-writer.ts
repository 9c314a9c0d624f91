import { writeFile } from 'node:fs/promises';
import { BufferTarget, EncodedPacket, EncodedVideoPacketSource, Mp4OutputFormat, Output } from 'mediabunny';

/**
 * Puts one recording's H.264 access units, cut from the shared encoder's stream, into an MP4
 * of its own (docs/operations.md#shared-video-encoder), with mediabunny: the same file ffmpeg
 * wrote before — H.264 in `avc1`, its index (`moov`) before the media data so a browser plays
 * it while downloading, the recording's first frame at 0.
 */

export interface AccessUnit {
  /** Time on the recording's own timeline, in ms (its first frame at 0). */
  ptsMs: number;
  key: boolean;
  /** Length-prefixed NAL units, as in FLV and MP4. */
  data: Buffer;
}

export interface Mp4Track {
  /** The decoder configuration record (`avcC`). */
  avcc: Buffer;
  width: number;
  height: number;
  /** Access units in decoding order (no B-frames: also presentation order), the first a keyframe. */
  units: readonly AccessUnit[];
  /** Where the video ends, in ms: the last frame lasts until then. */
  endMs: number;
}

export async function writeMp4(file: string, track: Mp4Track): Promise<void> {
  if (track.units.length === 0 || !track.units[0]!.key) throw new Error('a video needs a keyframe first');
  const target = new BufferTarget();
  const output = new Output({ format: new Mp4OutputFormat({ fastStart: 'in-memory' }), target });
  const source = new EncodedVideoPacketSource('avc');
  output.addVideoTrack(source);
  await output.start();
  const { avcc, units } = track;
  // The codec string names the profile, its constraints and the level: bytes 1 to 3 of avcC.
  const codec = `avc1.${avcc.subarray(1, 4).toString('hex')}`;
  for (let i = 0; i < units.length; i++) {
    const unit = units[i]!;
    const nextMs = i + 1 < units.length ? units[i + 1]!.ptsMs : Math.max(track.endMs, unit.ptsMs + 1);
    const packet = new EncodedPacket(unit.data, unit.key ? 'key' : 'delta', unit.ptsMs / 1000, (nextMs - unit.ptsMs) / 1000);
    await source.add(packet, i === 0 ? { decoderConfig: { codec, codedWidth: track.width, codedHeight: track.height, description: avcc } } : undefined);
  }
  await output.finalize();
  if (!target.buffer) throw new Error('the MP4 muxer produced no file');
  await writeFile(file, Buffer.from(target.buffer));
}
