import { crc32, deflateSync, inflateSync } from 'node:zlib';

/** Decodes an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) to RGBA rows. */
export function decodePng(png: Buffer): { width: number; height: number; pixel(x: number, y: number): [number, number, number] } {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const bitDepth = png[24];
  const colorType = png[25];
  if (bitDepth !== 8 || (colorType !== 2 && colorType !== 6) || png[28] !== 0) throw new Error(`unsupported PNG (depth ${bitDepth}, color ${colorType})`);
  const channels = colorType === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let offset = 8; offset < png.length; ) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('ascii', offset + 4, offset + 8);
    if (type === 'IDAT') idat.push(png.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    for (let i = 0; i < stride; i++) {
      const value = raw[y * (stride + 1) + 1 + i]!;
      const left = i >= channels ? out[y * stride + i - channels]! : 0;
      const up = y > 0 ? out[(y - 1) * stride + i]! : 0;
      const upLeft = y > 0 && i >= channels ? out[(y - 1) * stride + i - channels]! : 0;
      let predicted = 0;
      if (filter === 1) predicted = left;
      else if (filter === 2) predicted = up;
      else if (filter === 3) predicted = (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const pa = Math.abs(p - left);
        const pb = Math.abs(p - up);
        const pc = Math.abs(p - upLeft);
        predicted = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      out[y * stride + i] = (value + predicted) & 0xff;
    }
  }
  return {
    width,
    height,
    pixel: (x, y) => {
      const at = y * stride + x * channels;
      return [out[at]!, out[at + 1]!, out[at + 2]!];
    },
  };
}

/** Decodes a JPEG (what the model is shown) with jpeg-js; pixels are approximate, as JPEG is. */
export async function decodeJpeg(jpeg: Buffer): Promise<{ width: number; height: number; pixel(x: number, y: number): [number, number, number] }> {
  const { decode } = await import('jpeg-js');
  const image = decode(jpeg, { useTArray: true });
  return {
    width: image.width,
    height: image.height,
    pixel: (x, y) => {
      const i = (y * image.width + x) * 4;
      return [image.data[i]!, image.data[i + 1]!, image.data[i + 2]!];
    },
  };
}

/** Red as JPEG keeps it: close to (255, 0, 0). */
export const isRed = ([r, g, b]: [number, number, number]): boolean => r > 200 && g < 60 && b < 60;

/** A valid RGB PNG of the given size, one colour per row band from `seed` (distinct images, a few KB). */
export function encodePng(width: number, height: number, seed = 0): Buffer {
  const row = (y: number) => {
    const line = Buffer.alloc(1 + width * 3);
    const shade = (seed * 37 + Math.floor(y / 40) * 11) & 0xff;
    line.fill(Buffer.from([shade, (shade + 90) & 0xff, 255 - shade]), 1);
    return line;
  };
  const raw = Buffer.concat(Array.from({ length: height }, (_, y) => row(y)));
  const chunk = (type: string, data: Buffer) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'ascii');
    data.copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
