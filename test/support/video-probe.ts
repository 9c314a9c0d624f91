import { execFile } from 'node:child_process';
import { open, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { expect } from 'vitest';

/** Reading videos back in tests: ffprobe facts, one pixel of one frame, MP4 box order. */
const run = promisify(execFile);

export async function ffprobe(file: string): Promise<{ codec: string; pixFmt: string; width: number; height: number; durationMs: number; frames: number }> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-count_frames', '-show_entries', 'stream=codec_name,pix_fmt,width,height,nb_read_frames:format=duration', '-of', 'json', file]);
  const json = JSON.parse(stdout) as { streams: Array<Record<string, string | number>>; format: { duration: string } };
  const stream = json.streams[0]!;
  return {
    codec: String(stream.codec_name),
    pixFmt: String(stream.pix_fmt),
    width: Number(stream.width),
    height: Number(stream.height),
    frames: Number(stream.nb_read_frames),
    durationMs: Number(json.format.duration) * 1000,
  };
}

/** The RGB of one pixel of the picture shown at `sec` (a frame lasts until the next one). */
export async function pixelAt(file: string, sec: number, point: { x: number; y: number }): Promise<number[]> {
  // The timeline at 1000 pictures a second: picture i is what a player shows at i ms.
  const pixels = await pixelsDuring(file, 1000, sec, 0, point);
  expect(pixels).toHaveLength(1);
  return pixels[0]!;
}

export function isWhite([r, g, b]: number[]): boolean {
  return r! > 220 && g! > 220 && b! > 220;
}

export function isMarkerRed([r, g, b]: number[]): boolean {
  return r! > 180 && g! < 90 && b! < 90;
}

/** The MP4's top-level box types, in file order. */
export async function topLevelBoxes(file: string): Promise<string[]> {
  const handle = await open(file, 'r');
  try {
    const { size } = await stat(file);
    const types: string[] = [];
    const header = Buffer.alloc(16);
    let offset = 0;
    while (offset + 8 <= size) {
      await handle.read(header, 0, 16, offset);
      let boxSize = header.readUInt32BE(0);
      types.push(header.toString('latin1', 4, 8));
      if (boxSize === 1) boxSize = Number(header.readBigUInt64BE(8));
      if (boxSize === 0) break; // to the end of the file
      if (boxSize < 8) throw new Error(`bad box at ${offset}`);
      offset += boxSize;
    }
    return types;
  } finally {
    await handle.close();
  }
}

/**
 * The pixel at `point` in what a viewer sees at each instant 1/fps apart in [sec, sec + spanSec].
 * Frames carry their own time and last until the next one (the recorder writes a variable
 * rate): the `fps` filter turns that into one picture per instant, as a player shows it.
 */
export async function pixelsDuring(file: string, fps: number, sec: number, spanSec: number, point: { x: number; y: number }): Promise<number[][]> {
  const { stdout } = await new Promise<{ stdout: Buffer }>((resolve, reject) =>
    execFile(
      'ffmpeg',
      ['-v', 'error', '-i', file, '-vf', `format=rgb24,crop=1:1:${point.x}:${point.y},fps=${fps}:start_time=0:round=down`, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
      { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
      (error, out) => (error ? reject(error) : resolve({ stdout: out })),
    ),
  );
  const pixels: number[][] = [];
  for (let i = 0; i * 3 < stdout.length; i++) {
    const at = i / fps;
    if (at >= sec - 1e-6 && at <= sec + spanSec + 1e-6) pixels.push([...stdout.subarray(i * 3, i * 3 + 3)]);
  }
  return pixels;
}
