import { describe, expect, it } from 'vitest';
import { createClickMarker, createZmtpReader, markerCommands, zmtpGreeting, zmtpMessage, zmtpReady } from '../../src/recorder/click-marker.js';
import type { Logger } from '../../src/telemetry/types.js';

const logger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => logger };

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
    const read = createZmtpReader();
    const messages = [...read(stream.subarray(0, 70)), ...read(stream.subarray(70, 101)), ...read(stream.subarray(101))];
    expect(messages.map((parts) => parts.map((p) => p.toString()))).toEqual([
      ['', '0 Success'],
      ['', '22 Invalid argument'],
    ]);
  });
});
