import { describe, expect, it } from 'vitest';
import { prepareMessages } from '../../src/agent/context-window.js';
import type { Message } from '../../src/model/types.js';

const image = { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'x' } };

function history(steps: number): Message[] {
  const messages: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'begin' }, image] }];
  for (let i = 0; i < steps; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 'computer', input: {} }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: [image] }] });
  }
  return messages;
}

const imagesIn = (messages: Message[]) => JSON.stringify(messages).split('"type":"image"').length - 1;

describe('context window', () => {
  it('keeps every screenshot while there are few', () => {
    expect(imagesIn(prepareMessages(history(2)))).toBe(3);
  });

  it('removes old screenshots in chunks so the prefix stays stable for several steps', () => {
    const counts = [3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((n) => imagesIn(prepareMessages(history(n - 1))));
    // 3..7 images kept whole, then 5 removed at once, and so on.
    expect(counts).toEqual([3, 4, 5, 6, 7, 3, 4, 5, 6, 7]);
    // Two consecutive steps inside one chunk share their prefix exactly (cache hits).
    const strip = (m: Message) => JSON.stringify(m).replace(/,"cache_control":\{"type":"ephemeral"\}/g, '');
    const a = prepareMessages(history(3)).map(strip);
    const b = prepareMessages(history(4)).map(strip);
    expect(b.slice(0, a.length)).toEqual(a);
  });

  it('puts cache breakpoints on the last two user turns only, without touching the history', () => {
    const h = history(4);
    const before = JSON.stringify(h);
    const out = prepareMessages(h);
    expect(JSON.stringify(h)).toBe(before);
    const marked = out.map((m) => JSON.stringify(m).includes('cache_control'));
    expect(marked.filter(Boolean)).toHaveLength(2);
    expect(marked.at(-1)).toBe(true);
    expect(marked.at(-3)).toBe(true);
  });
});
