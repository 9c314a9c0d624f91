import { describe, expect, it } from 'vitest';
import { buildEncoderArgs } from '../../src/recorder/ffmpeg-process.js';
import { createFlvReader } from '../../src/recorder/flv-reader.js';

/** The shared encoder's output, read back: FLV tags as ffmpeg writes them, cut anywhere. */

function tag(type: number, timeMs: number, body: Buffer): Buffer {
  const header = Buffer.alloc(11);
  header[0] = type;
  header.writeUIntBE(body.length, 1, 3);
  header.writeUIntBE(timeMs & 0xffffff, 4, 3);
  header[7] = Math.floor(timeMs / 0x1000000);
  const back = Buffer.alloc(4);
  back.writeUInt32BE(11 + body.length);
  return Buffer.concat([header, body, back]);
}

/** An AVC video tag body: frame type and codec, packet type, composition offset, payload. */
function avc(key: boolean, packetType: number, cts: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = ((key ? 1 : 2) << 4) | 7;
  head[1] = packetType;
  head.writeIntBE(cts, 2, 3);
  return Buffer.concat([head, payload]);
}

const FILE_HEADER = Buffer.from([0x46, 0x4c, 0x56, 1, 1, 0, 0, 0, 9, 0, 0, 0, 0]);

describe('FLV reader', () => {
  it('gives the configuration record and each access unit with its time, however the bytes are cut', () => {
    const stream = Buffer.concat([
      FILE_HEADER,
      tag(18, 0, Buffer.from('metadata')),
      tag(9, 0, avc(true, 0, 0, Buffer.from([1, 0x64, 0, 0x1f]))),
      tag(9, 0, avc(true, 1, 0, Buffer.from('first'))),
      tag(9, 100, avc(false, 1, 0, Buffer.from('second'))),
      // Past 2^24 ms (4.6 hours into the stream): the extended byte holds the high bits.
      tag(9, 0x1000000 + 5, avc(true, 1, 40, Buffer.from('late'))),
      tag(9, 0x1000000 + 5, avc(true, 2, 0, Buffer.alloc(0))),
    ]);
    for (const cut of [1, 7, 13, 64, stream.length]) {
      const read = createFlvReader();
      const items = [];
      for (let at = 0; at < stream.length; at += cut) items.push(...read(stream.subarray(at, at + cut)));
      expect(items).toEqual([
        { kind: 'config', avcc: Buffer.from([1, 0x64, 0, 0x1f]) },
        { kind: 'frame', ptsMs: 0, key: true, data: Buffer.from('first') },
        { kind: 'frame', ptsMs: 100, key: false, data: Buffer.from('second') },
        { kind: 'frame', ptsMs: 0x1000000 + 45, key: true, data: Buffer.from('late') },
      ]);
    }
  });

  it('refuses a stream that is not FLV', () => {
    expect(() => createFlvReader()(Buffer.from('RIFF....WAVEfmt '))).toThrow(/not an FLV stream/);
  });
});

describe('the shared encoder command', () => {
  it('streams packets with their times as they are encoded, each recording starting on a keyframe', () => {
    const { output } = buildEncoderArgs({ ffmpegPath: 'ffmpeg', fps: 10, crf: 30, width: 1280, height: 800, outputPath: 'pipe:1', live: true });
    expect(output.slice(output.indexOf('-tune'), output.indexOf('-tune') + 2)).toEqual(['-tune', 'zerolatency']);
    expect(output[output.indexOf('-force_key_frames') + 1]).toBe('expr:if(isnan(prev_forced_t),1,gte(t,prev_forced_t+10))');
    expect(output.slice(-4)).toEqual(['-flush_packets', '1', '-f', 'flv']);
    expect(output).not.toContain('+faststart');
    expect(output.slice(output.indexOf('-pix_fmt'), output.indexOf('-pix_fmt') + 2)).toEqual(['-pix_fmt', 'yuv420p']);
  });
});
