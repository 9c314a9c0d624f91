import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClickMarker, createZmtpReader, markerCommands, zmtpGreeting, zmtpMessage, zmtpReady } from '../../src/recorder/click-marker.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';

const logger = createSilentLogger();

describe('click marker', () => {
  it('moves a slot to the click and enables it for 0.6 s of video time', () => {
    expect(markerCommands(2, 12.3456, 100, 50)).toEqual([
      'drawbox@click2ring x 82',
      'drawbox@click2ring y 32',
      'drawbox@click2dot x 95',
      'drawbox@click2dot y 45',
      'drawbox@click2ring enable between(t,12.346,12.946)',
      'drawbox@click2dot enable between(t,12.346,12.946)',
    ]);
  });

  it('adds a zmq command filter and disabled boxes to the graph', () => {
    const marker = createClickMarker({ socketPath: '/tmp/x/zmq.sock', logger, slots: 2 });
    expect(marker.filters[0]).toBe("zmq=bind_address='ipc\\:///tmp/x/zmq.sock'");
    expect(marker.filters.filter((f) => f.startsWith('drawbox@'))).toHaveLength(4);
    expect(marker.filters.every((f) => !f.startsWith('drawbox') || f.endsWith(":enable='0'"))).toBe(true);
    marker.close();
  });

  it('refuses a socket path that would break the filter graph', () => {
    expect(() => createClickMarker({ socketPath: "/tmp/a'b:c", logger })).toThrow(/unsafe/);
  });

  it('frames ZMTP 3 greeting, READY and DEALER requests', () => {
    const greeting = zmtpGreeting();
    expect(greeting).toHaveLength(64);
    expect([greeting[0], greeting[9], greeting[10]]).toEqual([0xff, 0x7f, 3]);
    expect(greeting.toString('ascii', 12, 16)).toBe('NULL');
    expect(zmtpReady('DEALER').toString('latin1')).toBe('\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER');
    expect(zmtpMessage('a b')).toEqual(Buffer.from([0x01, 0x00, 0x00, 0x03, 0x61, 0x20, 0x62]));
  });

  it('reads replies split anywhere, skipping the greeting and commands', () => {
    // What ffmpeg's REP socket sent in a real session: greeting, READY, then two replies.
    const stream = Buffer.concat([zmtpGreeting(), zmtpReady('REP'), zmtpMessage('0 Success'), zmtpMessage('22 Invalid argument')]);
    const commands: string[] = [];
    const read = createZmtpReader((name) => commands.push(name));
    const messages = [...read(stream.subarray(0, 70)), ...read(stream.subarray(70, 101)), ...read(stream.subarray(101))];
    expect(messages.map((parts) => parts.map((p) => p.toString()))).toEqual([
      ['', '0 Success'],
      ['', '22 Invalid argument'],
    ]);
    expect(commands).toEqual(['READY']);
  });
});

/**
 * A REP peer as strict as libzmq: it answers the greeting with its own and READY, and drops a
 * connection whose first message arrives before it has sent READY (what libzmq does when a
 * client's READY and first request land in one read).
 */
async function strictRepPeer(socketPath: string, options: { dropAfterHandshake?: number } = {}) {
  const received: string[][] = [];
  let connections = 0;
  let violations = 0;
  const server = net.createServer((socket) => {
    connections += 1;
    const connection = connections;
    let readySent = false;
    let commandsSeen = 0;
    const read = createZmtpReader(() => {
      commandsSeen += 1;
    });
    const messages: string[] = [];
    received.push(messages);
    socket.on('data', (data) => {
      // The client's greeting starts with its signature; ours goes out only once it came.
      const before = commandsSeen;
      for (const parts of read(data)) {
        if (!readySent) {
          violations += 1;
          socket.destroy();
          return;
        }
        messages.push(parts.map((p) => p.toString()).join('|'));
        socket.write(zmtpMessage('0 Success'));
      }
      if (!readySent && commandsSeen > before) {
        // Answer on a later turn, as libzmq's I/O thread does.
        setImmediate(() => {
          socket.write(Buffer.concat([zmtpGreeting(), zmtpReady('REP')]));
          readySent = true;
          if (options.dropAfterHandshake === connection) setImmediate(() => socket.destroy());
        });
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    received,
    get connections() {
      return connections;
    },
    get violations() {
      return violations;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('click marker channel', () => {
  it('sends commands only after the peer is READY, and the ones of a click made before that', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'marker-'));
    const socketPath = path.join(dir, 'zmq.sock');
    const peer = await strictRepPeer(socketPath);
    const marker = createClickMarker({ socketPath, logger, slots: 2 });
    try {
      marker.show(1.5, 100, 50);
      marker.connect();
      expect(await marker.whenReady()).toBe(true);
      marker.show(2.5, 10, 10);
      await expect.poll(() => peer.received.flat().length).toBe(12);
      expect(peer.violations).toBe(0);
      expect(peer.connections).toBe(1);
      expect(peer.received[0]).toEqual([...markerCommands(0, 1.5, 100, 50), ...markerCommands(1, 2.5, 10, 10)].map((c) => `|${c}`));
    } finally {
      marker.close();
      await peer.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reconnects when ffmpeg rebuilds its graph, and restores every slot', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'marker-'));
    const socketPath = path.join(dir, 'zmq.sock');
    const peer = await strictRepPeer(socketPath, { dropAfterHandshake: 1 });
    const marker = createClickMarker({ socketPath, logger, slots: 2 });
    try {
      marker.show(1, 100, 50);
      marker.show(2, 200, 60);
      marker.show(3, 300, 70); // reuses slot 0: only its latest commands matter
      marker.connect();
      await expect.poll(() => peer.connections).toBe(2);
      await expect.poll(() => peer.received[1]?.length ?? 0).toBe(12);
      expect(peer.violations).toBe(0);
      expect(new Set(peer.received[1])).toEqual(new Set([...markerCommands(0, 3, 300, 70), ...markerCommands(1, 2, 200, 60)].map((c) => `|${c}`)));
    } finally {
      marker.close();
      await peer.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
