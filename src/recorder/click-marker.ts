import net from 'node:net';
import type { Logger } from '../telemetry/types.js';

/**
 * A visible marker where each click landed, drawn by ffmpeg while it encodes.
 *
 * Why this way: the cheapest drawing is no drawing. The graph holds a few `drawbox` filters
 * that are disabled (their timeline `enable` is false, so ffmpeg passes frames by without
 * touching a pixel); a click moves one of them to the click point and enables it between the
 * click's video time and 0.6 s later, through ffmpeg's `zmq` filter, which applies commands
 * between frames. When no marker shows, the cost is one expression per frame; when one shows,
 * two small boxes are painted. The alternatives cost far more: compositing in Node means
 * decoding and re-encoding every JPEG, a second overlay input means blending every frame,
 * and drawing after the run means encoding the video twice.
 *
 * Timing follows the video's clock, not the command's arrival: the `enable` expression names
 * the click's video time, and the recorder hands ffmpeg the frames of a moment only once a
 * later frame (or the clock) shows that moment has passed, so the command is normally in
 * place before the frame it concerns goes through the graph (at worst a frame late).
 *
 * The command channel is ZeroMQ (what ffmpeg's `zmq` filter speaks) over a Unix socket: a
 * minimal ZMTP 3 DEALER client (NULL security, short frames) is below, since the protocol needs
 * a dozen lines and the worker should not carry a native ZeroMQ library for it.
 */

/** How long a marker shows after a click. */
export const MARKER_DURATION_MS = 600;
/** Outer square (px) and its line width; inner filled square (px). */
const RING_SIZE = 36;
const RING_THICKNESS = 4;
const DOT_SIZE = 10;
/** Opaque red: it stands out on most pages and survives yuv420p chroma subsampling. */
const MARKER_COLOR = 'red';
/** Clicks closer together than the marker's duration each need their own boxes. */
const DEFAULT_SLOTS = 4;

export interface ClickMarkerOptions {
  /** Unix socket path ffmpeg's `zmq` filter binds (inside a private temporary folder). */
  socketPath: string;
  logger: Logger;
  slots?: number;
  /** How long to keep trying to reach ffmpeg's socket (it appears once frames flow). */
  connectTimeoutMs?: number;
}

export interface ClickMarker {
  /** Filters to append to the encoder's graph. */
  readonly filters: readonly string[];
  /** Shows a marker centred on (x, y), in output pixels, from video second `atSec`. */
  show(atSec: number, x: number, y: number): void;
  /** Opens the command channel (call once ffmpeg has been started). */
  connect(): void;
  /**
   * Resolves true once the channel is open and every queued command was sent, false when it
   * never will be. Frames of a marked moment must not reach ffmpeg before that: the filter
   * applies commands to the frames it reads after them.
   */
  whenReady(): Promise<boolean>;
  /** ffmpeg is about to exit: the channel closing then is no rebuilt graph to reconnect to. */
  ending(): void;
  /** Closes the channel. Idempotent. */
  close(): void;
}

export function createClickMarker(options: ClickMarkerOptions): ClickMarker {
  const { socketPath, logger } = options;
  if (!/^[\w./-]+$/.test(socketPath)) throw new Error(`unsafe socket path for the zmq filter: ${socketPath}`);
  const slots = options.slots ?? DEFAULT_SLOTS;
  const connectTimeoutMs = options.connectTimeoutMs ?? 15_000;

  const filters: string[] = [
    // ':' separates filter options, hence the escaped colon inside the quoted address.
    `zmq=bind_address='ipc\\://${socketPath}'`,
  ];
  for (let i = 0; i < slots; i++) {
    filters.push(`drawbox@${ringName(i)}=w=${RING_SIZE}:h=${RING_SIZE}:t=${RING_THICKNESS}:c=${MARKER_COLOR}:enable='0'`);
    filters.push(`drawbox@${dotName(i)}=w=${DOT_SIZE}:h=${DOT_SIZE}:t=fill:c=${MARKER_COLOR}:enable='0'`);
  }

  let socket: net.Socket | undefined;
  /** True once both READY commands crossed: only then may messages be sent. */
  let connected = false;
  let closed = false;
  let ending = false;
  let nextSlot = 0;
  /**
   * Each slot's latest commands. They are what the filter must hold, so they are sent when the
   * channel opens, and again if ffmpeg rebuilds its graph (the filter then starts afresh).
   */
  const bySlot: Array<string[] | undefined> = [];
  let retryTimer: NodeJS.Timeout | undefined;
  let warned = false;
  const readyWaiters: Array<(ready: boolean) => void> = [];
  const settleReady = (ready: boolean) => {
    for (const wake of readyWaiters.splice(0)) wake(ready);
  };

  const send = (commands: readonly string[]): void => {
    if (!socket) return;
    for (const command of commands) socket.write(zmtpMessage(command));
  };

  const onReply = (parts: Buffer[]): void => {
    const text = parts.map((p) => p.toString('utf8')).filter((p) => p.length > 0).join(' ');
    // The zmq filter answers "<status> <message>"; 0 is success.
    if (!text.startsWith('0 ') && !warned) {
      warned = true;
      logger.warn({ reply: text.slice(0, 200) }, 'ffmpeg refused a click-marker command');
    }
  };

  /**
   * The peer's READY ends the handshake. Messages sent before it are a protocol error to
   * libzmq when they arrive in the same read as our READY: it drops the connection.
   */
  const onPeerReady = (): void => {
    if (connected || closed) return;
    connected = true;
    const held = bySlot.filter((commands) => commands !== undefined);
    logger.debug({ socketPath, markers: held.length }, 'click-marker channel open');
    for (const commands of held) send(commands);
    settleReady(true);
  };

  const attempt = (deadline: number): void => {
    if (closed) return;
    const s = net.connect({ path: socketPath });
    socket = s;
    const reader = createZmtpReader((name) => {
      if (name === 'READY' && socket === s) onPeerReady();
    });
    s.on('connect', () => {
      s.write(Buffer.concat([zmtpGreeting(), zmtpReady('DEALER')]));
    });
    s.on('data', (data) => {
      for (const parts of reader(data)) onReply(parts);
    });
    const lost = (reason: string): void => {
      s.destroy();
      if (socket !== s) return;
      socket = undefined;
      if (closed) return;
      if (connected && ending) {
        logger.debug({ reason }, 'click-marker channel closed');
        return;
      }
      if (connected) {
        // ffmpeg rebuilt its filter graph (or is exiting): the new zmq filter binds the same
        // path; reach it again and restore the markers.
        connected = false;
        logger.debug({ reason }, 'click-marker channel closed; reconnecting');
        retryTimer = setTimeout(() => attempt(Date.now() + connectTimeoutMs), 50);
        retryTimer.unref();
        return;
      }
      // The socket appears once ffmpeg has read its first frames and built its graph.
      if (Date.now() < deadline) {
        retryTimer = setTimeout(() => attempt(deadline), 50);
        retryTimer.unref();
      } else {
        logger.warn({ reason, socketPath }, 'could not reach ffmpeg to draw click markers; the video has none');
        closed = true;
        settleReady(false);
      }
    };
    s.on('error', (error: NodeJS.ErrnoException) => lost(error.message));
    // Closed by the peer during the handshake: try again (it keeps listening).
    s.on('close', () => lost('closed by ffmpeg'));
  };

  return {
    filters,
    show(atSec, x, y) {
      if (closed) return;
      const slot = nextSlot;
      nextSlot = (nextSlot + 1) % slots;
      const commands = markerCommands(slot, atSec, x, y);
      bySlot[slot] = commands;
      if (connected) send(commands);
    },
    connect() {
      if (socket || closed) return;
      attempt(Date.now() + connectTimeoutMs);
    },
    whenReady() {
      if (connected) return Promise.resolve(true);
      if (closed) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => readyWaiters.push(resolve));
    },
    ending() {
      ending = true;
    },
    close() {
      closed = true;
      settleReady(connected);
      if (retryTimer) clearTimeout(retryTimer);
      socket?.destroy();
      socket = undefined;
    },
  };
}

/** The zmq commands that place marker `slot` at (x, y) and show it from `atSec` for 0.6 s. */
export function markerCommands(slot: number, atSec: number, x: number, y: number): string[] {
  const from = Math.max(0, atSec).toFixed(3);
  const to = (Math.max(0, atSec) + MARKER_DURATION_MS / 1000).toFixed(3);
  const enable = `between(t,${from},${to})`;
  const ring = ringName(slot);
  const dot = dotName(slot);
  // Position first: the filter applies commands in order, before the next frame.
  return [
    `drawbox@${ring} x ${Math.round(x - RING_SIZE / 2)}`,
    `drawbox@${ring} y ${Math.round(y - RING_SIZE / 2)}`,
    `drawbox@${dot} x ${Math.round(x - DOT_SIZE / 2)}`,
    `drawbox@${dot} y ${Math.round(y - DOT_SIZE / 2)}`,
    `drawbox@${ring} enable ${enable}`,
    `drawbox@${dot} enable ${enable}`,
  ];
}

function ringName(slot: number): string {
  return `click${slot}ring`;
}

function dotName(slot: number): string {
  return `click${slot}dot`;
}

// ---- ZMTP 3.0, the minimum a DEALER peer of a REP socket needs (rfc.zeromq.org/spec/23) ----

/** 64-byte greeting: signature, version 3.0, NULL mechanism, as-client. */
export function zmtpGreeting(): Buffer {
  const greeting = Buffer.alloc(64);
  greeting[0] = 0xff;
  greeting[9] = 0x7f;
  greeting[10] = 3;
  greeting[11] = 0;
  greeting.write('NULL', 12, 'ascii');
  return greeting;
}

/** READY command announcing our socket type. */
export function zmtpReady(socketType: string): Buffer {
  const name = Buffer.from('Socket-Type', 'ascii');
  const value = Buffer.from(socketType, 'ascii');
  const valueSize = Buffer.alloc(4);
  valueSize.writeUInt32BE(value.length);
  const body = Buffer.concat([Buffer.from([5]), Buffer.from('READY', 'ascii'), Buffer.from([name.length]), name, valueSize, value]);
  return Buffer.concat([frameHeader(body.length, 0x04), body]);
}

/** One request as a DEALER sends it to a REP socket: an empty delimiter, then the body. */
export function zmtpMessage(text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  return Buffer.concat([frameHeader(0, 0x01), frameHeader(body.length, 0x00), body]);
}

function frameHeader(size: number, flags: number): Buffer {
  if (size < 256) return Buffer.from([flags, size]);
  const header = Buffer.alloc(9);
  header[0] = flags | 0x02; // long frame
  header.writeBigUInt64BE(BigInt(size), 1);
  return header;
}

/**
 * Incremental reader of the peer's stream: skips its greeting, names each command it sends
 * (READY ends the handshake), and returns each complete multipart message (a list of frames)
 * as bytes arrive.
 */
export function createZmtpReader(onCommand: (name: string) => void = () => undefined): (data: Buffer) => Buffer[][] {
  let buffer = Buffer.alloc(0);
  let greeted = false;
  let parts: Buffer[] = [];
  return (data) => {
    buffer = Buffer.concat([buffer, data]);
    const messages: Buffer[][] = [];
    if (!greeted) {
      if (buffer.length < 64) return messages;
      buffer = buffer.subarray(64);
      greeted = true;
    }
    for (;;) {
      if (buffer.length < 2) break;
      const flags = buffer[0]!;
      const long = (flags & 0x02) !== 0;
      const headerSize = long ? 9 : 2;
      if (buffer.length < headerSize) break;
      const size = long ? Number(buffer.readBigUInt64BE(1)) : buffer[1]!;
      if (buffer.length < headerSize + size) break;
      const body = buffer.subarray(headerSize, headerSize + size);
      buffer = buffer.subarray(headerSize + size);
      if (flags & 0x04) {
        // A command: its body starts with the name's length and the name (READY, ERROR).
        if (body.length > 0) onCommand(body.subarray(1, 1 + body[0]!).toString('ascii'));
        continue;
      }
      parts.push(Buffer.from(body));
      if ((flags & 0x01) === 0) {
        messages.push(parts);
        parts = [];
      }
    }
    return messages;
  };
}
