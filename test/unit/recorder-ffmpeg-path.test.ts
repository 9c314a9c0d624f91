import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEncoderArgs } from '../../src/recorder/ffmpeg-process.js';
import { FfmpegNotFoundError, resolveFfmpegPath } from '../../src/recorder/ffmpeg-path.js';

let dir: string;
let binary: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ffmpeg-path-'));
  binary = path.join(dir, 'ffmpeg');
  await writeFile(binary, '#!/bin/sh\nexit 0\n');
  await chmod(binary, 0o755);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const noStatic = () => Promise.reject(new Error('Cannot find package ffmpeg-static'));

describe('ffmpeg lookup', () => {
  it('uses the configured path, and only it', async () => {
    await expect(resolveFfmpegPath({ configuredPath: binary })).resolves.toEqual({ path: binary, source: 'configured' });
    await expect(resolveFfmpegPath({ configuredPath: path.join(dir, 'missing'), searchPath: dir })).rejects.toThrow(FfmpegNotFoundError);
    await expect(resolveFfmpegPath({ configuredPath: dir })).rejects.toThrow(/not an executable/);
  });

  it('then searches PATH', async () => {
    await expect(resolveFfmpegPath({ searchPath: ['/nonexistent', dir].join(path.delimiter), loadStatic: noStatic })).resolves.toEqual({ path: binary, source: 'path' });
  });

  it('then tries ffmpeg-static when it is installed', async () => {
    await expect(resolveFfmpegPath({ searchPath: '/nonexistent', loadStatic: async () => ({ default: binary }) })).resolves.toEqual({ path: binary, source: 'ffmpeg-static' });
    await expect(resolveFfmpegPath({ searchPath: '/nonexistent', loadStatic: async () => ({ default: null }) })).rejects.toThrow(/ffmpeg not found/);
    await expect(resolveFfmpegPath({ searchPath: '/nonexistent', loadStatic: noStatic })).rejects.toThrow(FfmpegNotFoundError);
  });
});

describe('encoder arguments', () => {
  it('encode H.264 yuv420p with one thread, even size and faststart', () => {
    const { input, output } = buildEncoderArgs({ ffmpegPath: 'ffmpeg', fps: 10, crf: 28, width: 1280, height: 800, outputPath: '/x.mp4', extraFilters: ['drawbox@a=enable=0'] });
    const after = (args: string[], flag: string) => args[args.indexOf(flag) + 1];
    expect(after(input, '-f')).toBe('matroska');
    expect(after(output, '-fps_mode')).toBe('passthrough');
    expect(after(input, '-threads')).toBe('1');
    expect(after(input, '-filter_threads')).toBe('1');
    expect(after(output, '-c:v')).toBe('libx264');
    expect(after(output, '-threads')).toBe('1');
    expect(after(output, '-x264-params')).toContain('threads=1');
    expect(after(output, '-pix_fmt')).toBe('yuv420p');
    expect(after(output, '-crf')).toBe('28');
    expect(after(output, '-movflags')).toBe('+faststart');
    expect(after(output, '-vf')).toBe('scale=1280:800:flags=bilinear,format=yuv420p,drawbox@a=enable=0');
  });
});
