import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { finished, PassThrough, Writable } from 'node:stream';
import ffmpeg from 'fluent-ffmpeg';
import { mkvFrame } from './mkv-stream.js';

/**
 * Our thin module around fluent-ffmpeg, the only file that imports it (the package is no
 * longer maintained upstream; keeping it here makes it cheap to replace by a plain spawn).
 * It starts one H.264 encoder reading timestamped JPEG frames on stdin (a Matroska stream,
 * mkv-stream.ts; variable rate, each frame lasting until the next), writing an MP4 file or, for
 * the shared encoder (shared-encoder.ts), FLV on stdout handed to us as it comes, and gives back
 * a small handle: write with back-pressure, end, signal, and a promise of the exit.
 */

export interface EncoderSpec {
  ffmpegPath: string;
  /** The timeline's slots per second: at most this many frames a second (frames carry their own time). */
  fps: number;
  /** x264 constant rate factor. */
  crf: number;
  /** Output size; both even (yuv420p needs even dimensions). */
  width: number;
  height: number;
  outputPath: string;
  /**
   * A long-lived encoder shared by recordings one after another (shared-encoder.ts): H.264
   * packets come out as each frame goes in, on stdout, instead of an MP4 written at the end.
   * `startEncoder` sets it when given a live output.
   */
  live?: boolean;
  /** Filters appended after scaling and pixel-format conversion (the click markers). */
  extraFilters?: readonly string[];
  /** VIDEO_MAX_BITRATE, bits a second (default VIDEO_MAX_BITRATE_DEFAULT); the buffer holds two seconds of it. */
  maxBitrate?: number;
}

export interface EncoderExit {
  /** ffmpeg exited by itself with status 0. */
  ok: boolean;
  /** Why not, with the tail of ffmpeg's stderr. */
  error?: string;
}

export interface EncoderProcess {
  /**
   * Queues bytes on ffmpeg's stdin. Resolves when ffmpeg has taken enough for more to be
   * written (the pipe drained), or at once when the encoder is gone (the bytes are lost).
   */
  write(chunk: Buffer): Promise<void>;
  /** Writes one JPEG frame at `timestampMs` on the recording's timeline (0 = its start), as `write`. */
  writeFrame(jpeg: Buffer, timestampMs: number): Promise<void>;
  /** Closes stdin: ffmpeg encodes what it has, writes the trailer, and exits. Idempotent. */
  end(): void;
  /** Sends a signal to ffmpeg if it is still running. */
  kill(signal: NodeJS.Signals): void;
  /** Whether the process has not exited yet. */
  readonly running: boolean;
  /**
   * CPU time ffmpeg has used so far, in clock ticks (Linux's /proc); undefined where that cannot
   * be read. Tells a busy encoder (on a loaded machine) from a stuck one.
   */
  cpuTicks(): number | undefined;
  /** Settles once, when ffmpeg has exited (or could not start). Never rejects. */
  readonly exited: Promise<EncoderExit>;
}

/**
 * The encoder yields the CPU to the agent's steps: when cores are short, a step waiting on a
 * screenshot matters more than a frame encoded now rather than a moment later (frames that
 * cannot wait are dropped by the pacer, and the timeline stays true).
 */
const ENCODER_NICENESS = 10;

/** Bytes buffered on our side before `write()` waits: a few JPEG frames, not more. */
const INPUT_HIGH_WATER_MARK = 512 * 1024;

export function buildEncoderArgs(spec: EncoderSpec): { input: string[]; output: string[] } {
  const maxBitrate = spec.maxBitrate ?? VIDEO_MAX_BITRATE_DEFAULT;
  const filters = [
    // Fixed, even output size (the recorder gives the first frame's size rounded down to
    // even): a later frame of another size is scaled to it instead of breaking the encoder,
    // which cannot change size mid-stream.
    `scale=${spec.width}:${spec.height}:flags=bilinear`,
    // mjpeg decodes to full-range yuvj420p; browsers expect limited-range yuv420p.
    'format=yuv420p',
    ...(spec.extraFilters ?? []),
  ];
  const input = [
    '-hide_banner',
    // Warnings and errors only: fluent-ffmpeg keeps stderr's tail for our error messages.
    '-loglevel', 'warning',
    '-nostats',
    // One thread for the filter graph too, so an execution costs one core at most.
    '-filter_threads', '1',
    // Start from the first frame instead of probing seconds of input: the format and codec
    // are given below, so there is nothing to learn, and the graph (with the click markers'
    // command channel) must be up while the run goes, not after 5 s of video.
    '-probesize', '32',
    '-analyzeduration', '0',
    // JPEG frames in a Matroska stream (mkv-stream.ts), each with its time on the timeline.
    '-f', 'matroska',
    '-c:v', 'mjpeg',
    // Single-threaded JPEG decoding.
    '-threads', '1',
    // A frame of another size goes through the scale filter below instead of making ffmpeg
    // rebuild the whole graph (which would also restart the click markers' command channel).
    '-reinit_filter', '0',
  ];
  const output = [
    '-vf', filters.join(','),
    // Each frame keeps its time and lasts until the next one: a still page is one frame, not
    // fps frames a second to decode, convert and encode.
    '-fps_mode', 'passthrough',
    '-an',
    '-c:v', 'libx264',
    // Cheap encoding for a live recording; the files stay small because screens are mostly still.
    '-preset', 'veryfast',
    '-crf', String(spec.crf),
    // A ceiling on the bitrate whatever the page paints: a page repainting noise made 15 Mbit/s
    // at the CRF alone (1.7 GB in 15 minutes). Past it x264 lowers the quality of those frames;
    // a still or ordinary page stays far below it (docs/security.md#limits).
    '-maxrate', String(maxBitrate), '-bufsize', String(2 * maxBitrate),
    // One encoder thread per execution (x264 otherwise starts one per core plus lookahead).
    '-threads', '1',
    '-x264-params', 'threads=1:lookahead-threads=1:sliced-threads=0',
    // A keyframe every 10 s of video (or every fps × 10 frames) keeps seeking in a long video
    // quick without bloating still pages.
    '-force_key_frames', 'expr:gte(t,n_forced*10)',
    '-g', String(Math.max(1, Math.round(spec.fps * 10))),
    // The pixel format every browser decodes.
    '-pix_fmt', 'yuv420p',
    // Moves the index (moov) before the media data when the file is finalised, so a browser
    // can start playing before it has downloaded the whole file.
    '-movflags', '+faststart',
    '-f', 'mp4',
  ];
  if (spec.live) {
    // Shared by recordings one after another: each recording's first frame is at least 10 s
    // after the last one's (shared-encoder.ts), so it is a keyframe, a point the MP4 can start at.
    const keyAt = output.indexOf('-force_key_frames') + 1;
    output[keyAt] = 'expr:if(isnan(prev_forced_t),1,gte(t,prev_forced_t+10))';
    // No lookahead and no B-frames: each frame's packet leaves the encoder as the frame goes in.
    output.splice(output.indexOf('-crf'), 0, '-tune', 'zerolatency');
    // Packets with their times on stdout, each flushed as it comes (FLV, flv-reader.ts).
    output.splice(output.indexOf('-movflags'), 4, '-flush_packets', '1', '-f', 'flv');
  }
  return { input, output };
}

/** The encoder's default bitrate ceiling (VIDEO_MAX_BITRATE), bits a second: 2 Mbit/s, at most about 225 MB in 15 minutes. */
export const VIDEO_MAX_BITRATE_DEFAULT = 2_000_000;

/**
 * Starts an encoder writing the MP4 file `spec.outputPath`, or, given `liveOutput`, a live one
 * (`EncoderSpec.live`) whose stdout (FLV) is handed to `liveOutput` chunk by chunk as it comes;
 * its `exited` then settles after the last chunk.
 */
export function startEncoder(spec: EncoderSpec, liveOutput?: (chunk: Buffer) => void): EncoderProcess {
  const stdin = new PassThrough({ highWaterMark: INPUT_HIGH_WATER_MARK });
  const { input, output } = buildEncoderArgs({ ...spec, live: liveOutput !== undefined });
  // What `cpuTicks` finds the process by in /proc: its output file (unique per recording), or a
  // live encoder's own tag (a metadata entry of its FLV stream, which the reader skips).
  const tag = liveOutput ? `ew-encoder=${randomUUID()}` : spec.outputPath;
  // Not closed once ended (`autoDestroy: false`): fluent-ffmpeg takes an output stream's 'close'
  // for its reader gone, and kills ffmpeg 20 ms later with an error instead of letting it exit.
  const sink = liveOutput
    ? new Writable({
        autoDestroy: false,
        write(chunk: Buffer, _encoding, done) {
          liveOutput(chunk);
          done();
        },
      })
    : undefined;
  // fluent-ffmpeg splits an option string on its space when options are given as one array;
  // passing them as separate arguments keeps every value (filter graphs) intact.
  // `niceness` makes fluent-ffmpeg start the encoder through `nice -n N` (not on Windows).
  const command = ffmpeg({ stdoutLines: 30, niceness: ENCODER_NICENESS })
    .setFfmpegPath(spec.ffmpegPath)
    .input(stdin)
    .inputOptions(...input)
    .outputOptions(...output, ...(liveOutput ? ['-metadata', tag] : []))
    .output(sink ?? spec.outputPath);

  let started = false;
  let pid: number | undefined;
  let running = true;
  let ended = false;
  const drainWaiters = new Set<() => void>();
  let settle!: (exit: EncoderExit) => void;
  const exited = new Promise<EncoderExit>((resolve) => {
    settle = (exit) => {
      running = false;
      for (const wake of drainWaiters) wake();
      drainWaiters.clear();
      resolve(exit);
    };
  });

  // fluent-ffmpeg reports the exit once ffmpeg has exited and its stderr closed, not its stdout:
  // a live encoder's exit waits for the rest of its output (which ends when ffmpeg is gone, even
  // one that could not start). Nothing to wait for when it failed before starting ffmpeg.
  const outputRead = sink ? new Promise<void>((resolve) => finished(sink, () => resolve())) : Promise.resolve();
  const report = (exit: EncoderExit): void => void (started ? outputRead : Promise.resolve()).then(() => settle(exit));
  command.on('start', () => {
    started = true;
  });
  command.on('end', () => report({ ok: true }));
  command.on('error', (error: Error, _stdout: string | null, stderr: string | null) => {
    const tail = typeof stderr === 'string' ? stderr.trim().split('\n').slice(-5).join(' | ') : '';
    report({ ok: false, error: tail && !error.message.includes(tail) ? `${error.message} (${tail})` : error.message });
  });
  // Writing after ffmpeg died fails with EPIPE; the exit is reported through `exited`.
  stdin.on('error', () => undefined);
  command.run();

  const handle: EncoderProcess = {
    get running() {
      return running;
    },
    exited,
    writeFrame(jpeg, timestampMs) {
      return handle.write(mkvFrame(jpeg, timestampMs));
    },
    write(chunk) {
      if (!running || ended) return Promise.resolve();
      if (stdin.write(chunk)) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const wake = (): void => {
          stdin.off('drain', wake);
          drainWaiters.delete(wake);
          resolve();
        };
        drainWaiters.add(wake);
        stdin.on('drain', wake);
      });
    },
    end() {
      if (ended) return;
      ended = true;
      stdin.end();
    },
    kill(signal) {
      if (running && started) command.kill(signal);
    },
    cpuTicks() {
      if (!running || !started) return undefined;
      pid ??= childPidRunning(tag);
      return pid === undefined ? undefined : processCpuTicks(pid);
    },
  };
  return handle;
}

/**
 * The pid of this process's child whose command line has `argument` (an encoder's output file,
 * or a live encoder's tag); undefined off Linux or when there is none. fluent-ffmpeg gives
 * no public way to the process it spawned, and the CPU time it has used (which tells a slow
 * encoder from a stuck one, see `watchFinish`) is only to be had by pid: this is the one piece
 * we do beside it, read from /proc instead of reaching into the library's internals.
 */
export function childPidRunning(argument: string): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // Field 4 (ppid) is the second after the parenthesised command name.
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid !== process.pid) continue;
        if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(argument)) return Number(entry);
      } catch {
        // Gone between listing and reading.
      }
    }
  } catch {
    // No /proc here.
  }
  return undefined;
}

/** User plus system CPU time of a process in clock ticks, from /proc/PID/stat; undefined off Linux or once it is gone. */
export function processCpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    // Field 3 (state) comes first there; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Watches an encoder finish: SIGTERM once it has used no CPU for `idleMs` (stuck), or once
 * `maxMs` have passed however busy it is; SIGKILL `killGraceMs` after that. An encoder that
 * keeps using CPU is only slow (a loaded machine, where its lower priority starves it): it is
 * given more time. Where CPU time cannot be read, `idleMs` is the deadline. Returns a function
 * that stops watching.
 */
export function watchFinish(
  encoder: { cpuTicks(): number | undefined; kill(signal: NodeJS.Signals): void },
  limits: { idleMs: number; maxMs: number; killGraceMs: number },
  report: (event: 'waiting' | 'term' | 'kill', fields: { elapsedMs: number; working?: boolean }) => void,
): () => void {
  const startedMs = Date.now();
  let lastTicks = encoder.cpuTicks();
  let timer: NodeJS.Timeout;
  const check = (): void => {
    const ticks = encoder.cpuTicks();
    // An encoder started during the stop (its first frame came late) has no earlier reading.
    const working = ticks !== undefined && (lastTicks === undefined || ticks > lastTicks);
    lastTicks = ticks;
    const elapsedMs = Date.now() - startedMs;
    if (working && elapsedMs + limits.idleMs <= limits.maxMs) {
      report('waiting', { elapsedMs });
      timer = setTimeout(check, limits.idleMs);
      return;
    }
    report('term', { elapsedMs, working });
    encoder.kill('SIGTERM');
    timer = setTimeout(() => {
      report('kill', { elapsedMs: Date.now() - startedMs });
      encoder.kill('SIGKILL');
    }, limits.killGraceMs);
  };
  timer = setTimeout(check, limits.idleMs);
  return () => clearTimeout(timer);
}

const filterSupport = new Map<string, Promise<Set<string>>>();

/** Names of the filters this ffmpeg build has (asked once per binary). */
export function availableFilters(ffmpegPath: string): Promise<Set<string>> {
  let known = filterSupport.get(ffmpegPath);
  if (!known) {
    known = new Promise<Set<string>>((resolve) => {
      ffmpeg()
        .setFfmpegPath(ffmpegPath)
        .availableFilters((error, filters) => resolve(error ? new Set() : new Set(Object.keys(filters ?? {}))));
    });
    filterSupport.set(ffmpegPath, known);
  }
  return known;
}
