import { describe, expect, it } from 'vitest';
import type { ComputerToolType } from '../../src/domain/action-spaces.js';
import type { ActionContext, ActionOutcome, DisplayGeometry } from '../../src/toolset/computer-types.js';
import { SCROLL_PX_PER_CLICK, executeComputerAction } from '../../src/toolset/computer-actions.js';
import type { BrowserSession, BrowserTab, Screenshot, ScreenshotOptions, Size } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';

/** An in-memory session that records every call as a string. */
function fakeSession(viewport: Size = { width: 1280, height: 800 }) {
  const calls: string[] = [];
  const shots: Array<ScreenshotOptions | undefined> = [];
  let pointer = { x: 0, y: 0 };
  let failOn: string | undefined;
  const record = (name: string, ...args: unknown[]) => {
    if (failOn === name) throw new Error(`browser gone (${name})`);
    calls.push(args.length ? `${name}(${args.join(',')})` : name);
  };
  // Only what the computer actions use; the rest of the port is not theirs.
  const session = {
    viewport,
    navigate: async (url) => ({ ok: true, url }),
    currentUrl: () => 'about:blank',
    mouseMove: async (x, y) => {
      record('mouseMove', x, y);
      pointer = { x, y };
    },
    mouseDown: async (b) => record('mouseDown', b),
    mouseUp: async (b) => record('mouseUp', b),
    click: async (x, y, o) => {
      record('click', x, y, o.button, o.clickCount);
      pointer = { x, y };
    },
    wheel: async (x, y, dx, dy) => {
      record('wheel', x, y, dx, dy);
      pointer = { x, y };
    },
    pointer: () => ({ ...pointer }),
    keyDown: async (k) => record('keyDown', k),
    keyUp: async (k) => record('keyUp', k),
    typeText: async (t) => record('typeText', t),
    tab: () => ({ hideText: async (ref: string | null) => (record('hideText', ref ?? 'focused'), true) }) as unknown as BrowserTab,
    setInputFiles: async () => ({ ok: false, error: 'no input files' }),
    pendingFileChooser: () => undefined,
    screenshot: async (o?: ScreenshotOptions): Promise<Screenshot> => {
      shots.push(o);
      record('screenshot');
      return { data: Buffer.from('png'), mediaType: 'image/png', width: o?.outputSize?.width ?? viewport.width, height: o?.outputSize?.height ?? viewport.height };
    },
    settle: async () => undefined,
    startScreencast: async () => ({ stop: async () => undefined }),
    close: async () => undefined,
  } satisfies Partial<BrowserSession> as unknown as BrowserSession;
  return {
    session,
    calls,
    shots,
    failOn: (name: string | undefined) => {
      failOn = name;
    },
  };
}

/** display = viewport / factor. */
function geometry(display: Size, factor = 1): DisplayGeometry {
  const viewport = { width: display.width * factor, height: display.height * factor };
  return {
    display,
    viewport,
    toViewport: (x, y) => ({ x: Math.round(x * factor), y: Math.round(y * factor) }),
    toDisplay: (x, y) => ({ x: Math.round(x / factor), y: Math.round(y / factor) }),
  };
}

function setup(options: { factor?: number; version?: ComputerToolType } = {}) {
  const factor = options.factor ?? 1;
  const display = { width: 1280 / factor, height: 800 / factor };
  const fake = fakeSession();
  const vault = createSecretVault({ user: 'ann', password: 's3cret!' }, { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true } } });
  const context: ActionContext = {
    session: fake.session,
    geometry: geometry(display, factor),
    toolVersion: options.version ?? 'computer_20251124',
    vault,
    signal: new AbortController().signal,
  };
  const run = (input: unknown, ctx: ActionContext = context) => executeComputerAction(input, ctx);
  return { ...fake, context, run };
}

function expectOk(outcome: ActionOutcome): Extract<ActionOutcome, { ok: true }> {
  if (!outcome.ok) throw new Error(`expected ok, got error: ${outcome.error}`);
  return outcome;
}

function expectError(outcome: ActionOutcome, pattern: RegExp): Extract<ActionOutcome, { ok: false }> {
  if (outcome.ok) throw new Error(`expected an error, got ok: ${outcome.label}`);
  expect(outcome.error).toMatch(pattern);
  return outcome;
}

describe('executeComputerAction: keys', () => {
  it('presses a chord modifiers first and releases in reverse', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'key', text: 'ctrl+shift+t' }));
    expect(t.calls).toEqual(['keyDown(Control)', 'keyDown(Shift)', 'keyDown(t)', 'keyUp(t)', 'keyUp(Shift)', 'keyUp(Control)']);
    expect(out).toMatchObject({ action: 'key', counted: true, wantsScreenshot: true, label: 'key ctrl+shift+t' });
  });

  it('presses space-separated chords in order', async () => {
    const t = setup();
    expectOk(await t.run({ action: 'key', text: 'ctrl+a Delete' }));
    expect(t.calls).toEqual(['keyDown(Control)', 'keyDown(a)', 'keyUp(a)', 'keyUp(Control)', 'keyDown(Delete)', 'keyUp(Delete)']);
  });

  it('refuses an unknown key name without pressing anything', async () => {
    const t = setup();
    const out = expectError(await t.run({ action: 'key', text: 'ctrl+Bogus' }), /Bogus/);
    expect(out.counted).toBe(true);
    expect(t.calls).toEqual([]);
  });

  it('refuses key without text, with a non-string text, or with a coordinate', async () => {
    const t = setup();
    expectError(await t.run({ action: 'key' }), /text is required/);
    expectError(await t.run({ action: 'key', text: 5 }), /must be a string/);
    expectError(await t.run({ action: 'key', text: 'a', coordinate: [1, 1] }), /coordinate is not accepted/);
    expect(t.calls).toEqual([]);
  });

  it('holds keys for the duration and releases them', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'hold_key', text: 'shift', duration: 0.01 }));
    expect(t.calls).toEqual(['keyDown(Shift)', 'keyUp(Shift)']);
    expect(out.label).toBe('hold_key shift for 0.01s');
  });

  it('validates hold_key duration', async () => {
    const t = setup();
    expectError(await t.run({ action: 'hold_key', text: 'shift' }), /duration/);
    expectError(await t.run({ action: 'hold_key', text: 'shift', duration: -1 }), /negative/);
    expectError(await t.run({ action: 'hold_key', text: 'shift', duration: 101 }), /too long/);
    expectError(await t.run({ action: 'hold_key', text: 'shift', duration: '2' }), /number/);
    expectError(await t.run({ action: 'hold_key', duration: 1 }), /text is required/);
  });

  it('stops holding early when the execution is aborted, still releasing', async () => {
    const t = setup();
    const controller = new AbortController();
    const pending = t.run({ action: 'hold_key', text: 'ctrl', duration: 100 }, { ...t.context, signal: controller.signal });
    controller.abort();
    expectOk(await pending);
    expect(t.calls).toEqual(['keyDown(Control)', 'keyUp(Control)']);
  });
});

describe('executeComputerAction: type', () => {
  it('types the revealed secret while the label keeps the placeholder', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'type', text: 'pw: {{password}}' }));
    // One character at a time, the focused field marked (read as the placeholder, drawn as
    // discs) before each: a widget that moves the focus on gets each box marked.
    expect(t.calls).toEqual([...'pw: s3cret!'].flatMap((c) => ['hideText(focused)', `typeText(${c})`]));
    expect(out.label).toBe('type "pw: {{password}}"');
    expect(JSON.stringify(out)).not.toContain('s3cret!');
  });

  it('refuses type without text or with empty text', async () => {
    const t = setup();
    expectError(await t.run({ action: 'type' }), /text is required/);
    expectError(await t.run({ action: 'type', text: '' }), /empty/);
    expectError(await t.run({ action: 'type', text: 'x', coordinate: [3, 3] }), /coordinate is not accepted/);
  });

  it('shortens long text in the label', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'type', text: 'x'.repeat(200) }));
    expect(out.label.length).toBeLessThan(100);
  });
});

describe('executeComputerAction: pointer', () => {
  it('clicks at the converted coordinate with the right button and count', async () => {
    const t = setup({ factor: 2 });
    const cases: Array<[string, string]> = [
      ['left_click', 'click(200,100,left,1)'],
      ['right_click', 'click(200,100,right,1)'],
      ['middle_click', 'click(200,100,middle,1)'],
      ['double_click', 'click(200,100,left,2)'],
      ['triple_click', 'click(200,100,left,3)'],
    ];
    for (const [action, call] of cases) {
      t.calls.length = 0;
      const out = expectOk(await t.run({ action, coordinate: [100, 50] }));
      expect(t.calls).toEqual([call]);
      expect(out.point).toEqual({ x: 200, y: 100 });
      expect(out.counted).toBe(true);
      expect(out.wantsScreenshot).toBe(true);
    }
  });

  it('labels clicks in display pixels', async () => {
    const t = setup();
    expect(expectOk(await t.run({ action: 'left_click', coordinate: [412, 318] })).label).toBe('click (412, 318)');
    expect(expectOk(await t.run({ action: 'double_click', coordinate: [1, 2] })).label).toBe('double click (1, 2)');
  });

  it('clicks where the pointer is when no coordinate is given', async () => {
    const t = setup();
    await t.run({ action: 'mouse_move', coordinate: [30, 40] });
    t.calls.length = 0;
    const out = expectOk(await t.run({ action: 'left_click' }));
    expect(t.calls).toEqual(['click(30,40,left,1)']);
    expect(out.point).toEqual({ x: 30, y: 40 });
  });

  it('holds modifier keys given in text around a click, releasing them', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'left_click', coordinate: [10, 20], text: 'ctrl+shift' }));
    expect(t.calls).toEqual(['keyDown(Control)', 'keyDown(Shift)', 'click(10,20,left,1)', 'keyUp(Shift)', 'keyUp(Control)']);
    expect(out.label).toBe('ctrl+shift+click (10, 20)');
  });

  it('accepts the older `key` spelling of click modifiers', async () => {
    const t = setup({ version: 'computer_20250124' });
    expectOk(await t.run({ action: 'left_click', coordinate: [10, 20], key: 'shift' }));
    expect(t.calls).toEqual(['keyDown(Shift)', 'click(10,20,left,1)', 'keyUp(Shift)']);
  });

  it('releases held modifiers even when the click fails, and reports the failure', async () => {
    const t = setup();
    t.failOn('click');
    await expect(t.run({ action: 'left_click', coordinate: [10, 20], text: 'alt' })).rejects.toThrow(/browser gone/);
    expect(t.calls).toEqual(['keyDown(Alt)', 'keyUp(Alt)']);
  });

  it('rejects bad coordinates with a reason', async () => {
    const t = setup();
    expectError(await t.run({ action: 'left_click', coordinate: [1280, 10] }), /outside the display/);
    expectError(await t.run({ action: 'left_click', coordinate: [-1, 10] }), /outside the display/);
    expectError(await t.run({ action: 'left_click', coordinate: [10] }), /\[x, y\]/);
    expectError(await t.run({ action: 'left_click', coordinate: '10,20' }), /\[x, y\]/);
    expectError(await t.run({ action: 'left_click', coordinate: [10, 'a'] }), /\[x, y\]/);
    expectError(await t.run({ action: 'mouse_move' }), /coordinate is required/);
    expectError(await t.run({ action: 'left_click', coordinate: [1, 1], text: 'Bogus' }), /Bogus/);
    expectError(await t.run({ action: 'left_click', coordinate: [1, 1], scroll_amount: 3 }), /scroll_amount is not accepted/);
    expect(t.calls).toEqual([]);
  });

  it('uses the coordinate limits of a scaled display', async () => {
    const t = setup({ factor: 2 });
    expectError(await t.run({ action: 'mouse_move', coordinate: [640, 10] }), /x must be 0–639/);
    expectOk(await t.run({ action: 'mouse_move', coordinate: [639, 399] }));
    expect(t.calls).toEqual(['mouseMove(1278,798)']);
  });

  it('drags from start_coordinate to coordinate in steps, button held throughout', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'left_click_drag', start_coordinate: [10, 10], coordinate: [110, 60] }));
    expect(t.calls[0]).toBe('mouseMove(10,10)');
    expect(t.calls[1]).toBe('mouseDown(left)');
    expect(t.calls.at(-2)).toBe('mouseMove(110,60)');
    expect(t.calls.at(-1)).toBe('mouseUp(left)');
    expect(t.calls.filter((c) => c.startsWith('mouseMove')).length).toBeGreaterThan(3);
    expect(out.point).toEqual({ x: 110, y: 60 });
    expect(out.label).toBe('drag (10, 10) → (110, 60)');
  });

  it('releases the button when a drag move fails', async () => {
    const t = setup();
    let moves = 0;
    const move = t.session.mouseMove;
    t.session.mouseMove = async (x, y, signal) => {
      if (++moves === 3) throw new Error('browser gone');
      await move(x, y, signal);
    };
    await expect(t.run({ action: 'left_click_drag', start_coordinate: [0, 0], coordinate: [100, 100] })).rejects.toThrow(/browser gone/);
    expect(t.calls.at(-1)).toBe('mouseUp(left)');
  });

  it('validates left_click_drag parameters', async () => {
    const t = setup();
    expectError(await t.run({ action: 'left_click_drag', coordinate: [1, 1] }), /start_coordinate is required/);
    expectError(await t.run({ action: 'left_click_drag', start_coordinate: [1, 1] }), /coordinate is required/);
    expectError(await t.run({ action: 'left_click_drag', start_coordinate: [1, 1], coordinate: [1, 5000] }), /outside/);
  });

  it('keeps the button down between left_mouse_down and left_mouse_up', async () => {
    const t = setup();
    expectOk(await t.run({ action: 'left_mouse_down' }));
    expectOk(await t.run({ action: 'mouse_move', coordinate: [50, 60] }));
    const up = expectOk(await t.run({ action: 'left_mouse_up' }));
    expect(t.calls).toEqual(['mouseDown(left)', 'mouseMove(50,60)', 'mouseUp(left)']);
    expect(up.point).toEqual({ x: 50, y: 60 });
    expect(up.label).toBe('mouse up at (50, 60)');
  });

  it('moves first when left_mouse_down is given a coordinate', async () => {
    const t = setup();
    expectOk(await t.run({ action: 'left_mouse_down', coordinate: [7, 8] }));
    expect(t.calls).toEqual(['mouseMove(7,8)', 'mouseDown(left)']);
    expectError(await t.run({ action: 'left_mouse_up', text: 'shift' }), /text is not accepted/);
  });

  it('reports the cursor position in display pixels without touching the page', async () => {
    const t = setup({ factor: 2 });
    await t.run({ action: 'mouse_move', coordinate: [100, 50] });
    t.calls.length = 0;
    const out = expectOk(await t.run({ action: 'cursor_position' }));
    expect(out).toMatchObject({ text: 'X=100,Y=50', counted: false, wantsScreenshot: false });
    expect(t.calls).toEqual([]);
    expectError(await t.run({ action: 'cursor_position', coordinate: [1, 1] }), /not accepted/);
  });
});

describe('executeComputerAction: scroll', () => {
  it('wheels by 100 px per click in each direction at the coordinate', async () => {
    const t = setup();
    const px = 3 * SCROLL_PX_PER_CLICK;
    const expected: Record<string, string> = {
      down: `wheel(640,400,0,${px})`,
      up: `wheel(640,400,0,${-px})`,
      right: `wheel(640,400,${px},0)`,
      left: `wheel(640,400,${-px},0)`,
    };
    for (const [direction, call] of Object.entries(expected)) {
      t.calls.length = 0;
      const out = expectOk(await t.run({ action: 'scroll', coordinate: [640, 400], scroll_direction: direction, scroll_amount: 3 }));
      expect(t.calls).toEqual([call]);
      expect(out.label).toBe(`scroll ${direction} 3 at (640, 400)`);
      expect(out.point).toEqual({ x: 640, y: 400 });
    }
    expect(SCROLL_PX_PER_CLICK).toBe(100);
  });

  it('scrolls at the pointer when no coordinate is given', async () => {
    const t = setup();
    await t.run({ action: 'mouse_move', coordinate: [5, 6] });
    t.calls.length = 0;
    expectOk(await t.run({ action: 'scroll', scroll_direction: 'down', scroll_amount: 1 }));
    expect(t.calls).toEqual(['wheel(5,6,0,100)']);
  });

  it('holds a modifier while scrolling and releases it even if the wheel fails', async () => {
    const t = setup();
    expectOk(await t.run({ action: 'scroll', coordinate: [1, 1], scroll_direction: 'up', scroll_amount: 1, text: 'ctrl' }));
    expect(t.calls).toEqual(['keyDown(Control)', 'wheel(1,1,0,-100)', 'keyUp(Control)']);
    t.calls.length = 0;
    t.failOn('wheel');
    await expect(t.run({ action: 'scroll', coordinate: [1, 1], scroll_direction: 'up', scroll_amount: 1, text: 'shift' })).rejects.toThrow();
    expect(t.calls).toEqual(['keyDown(Shift)', 'keyUp(Shift)']);
  });

  it('validates direction and amount', async () => {
    const t = setup();
    expectError(await t.run({ action: 'scroll', coordinate: [1, 1], scroll_amount: 3 }), /scroll_direction is required/);
    expectError(await t.run({ action: 'scroll', coordinate: [1, 1], scroll_direction: 'sideways', scroll_amount: 3 }), /"up", "down"/);
    expectError(await t.run({ action: 'scroll', coordinate: [1, 1], scroll_direction: 'down' }), /scroll_amount/);
    expectError(await t.run({ action: 'scroll', coordinate: [1, 1], scroll_direction: 'down', scroll_amount: -2 }), /non-negative integer/);
    expectError(await t.run({ action: 'scroll', coordinate: [1, 1], scroll_direction: 'down', scroll_amount: 1.5 }), /integer/);
    expectError(await t.run({ action: 'scroll', coordinate: [9999, 1], scroll_direction: 'down', scroll_amount: 1 }), /outside/);
    expect(t.calls).toEqual([]);
  });
});

describe('executeComputerAction: wait, screenshot, zoom', () => {
  it('waits and asks for a screenshot', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'wait', duration: 0.01 }));
    expect(out).toMatchObject({ counted: true, wantsScreenshot: true, label: 'wait 0.01s' });
    expectError(await t.run({ action: 'wait' }), /duration/);
    expectError(await t.run({ action: 'wait', duration: 1000 }), /too long/);
  });

  it('screenshot is not counted and wants a screenshot', async () => {
    const t = setup();
    const out = expectOk(await t.run({ action: 'screenshot' }));
    expect(out).toMatchObject({ counted: false, wantsScreenshot: true });
    expect(t.calls).toEqual([]);
    const bad = expectError(await t.run({ action: 'screenshot', coordinate: [1, 1] }), /not accepted/);
    expect(bad.counted).toBe(false);
  });

  it('zoom captures the region scaled to fit the display, aspect kept', async () => {
    const t = setup({ factor: 2 });
    // Display 640x400; region 100x50 display px = 200x100 viewport px.
    const out = expectOk(await t.run({ action: 'zoom', region: [10, 20, 110, 70] }));
    expect(t.shots).toEqual([{ clip: { x: 20, y: 40, width: 200, height: 100 }, outputSize: { width: 640, height: 320 }, format: 'jpeg', quality: 80 }]);
    expect(out).toMatchObject({ counted: false, wantsScreenshot: false, label: 'zoom [10, 20, 110, 70]' });
    expect(out.image?.width).toBe(640);
    expect(out.image?.height).toBe(320);
  });

  it('zoom on a tall region fits the height', async () => {
    const t = setup();
    expectOk(await t.run({ action: 'zoom', region: [0, 0, 100, 400] }));
    expect(t.shots[0]?.outputSize).toEqual({ width: 200, height: 800 });
  });

  it('validates the zoom region', async () => {
    const t = setup();
    expectError(await t.run({ action: 'zoom' }), /region is required/);
    expectError(await t.run({ action: 'zoom', region: [0, 0, 10] }), /four numbers/);
    expectError(await t.run({ action: 'zoom', region: [10, 10, 5, 20] }), /empty/);
    expectError(await t.run({ action: 'zoom', region: [0, 0, 1281, 10] }), /outside/);
    expect(t.shots).toEqual([]);
  });

  it('zoom is unknown to computer_20250124', async () => {
    const t = setup({ version: 'computer_20250124' });
    const out = expectError(await t.run({ action: 'zoom', region: [0, 0, 10, 10] }), /unknown action "zoom" for computer_20250124/);
    expect(out.counted).toBe(false);
  });
});

describe('executeComputerAction: bad input', () => {
  it('answers an unknown action with the list of known ones, uncounted', async () => {
    const t = setup();
    const out = expectError(await t.run({ action: 'teleport' }), /unknown action "teleport".*left_click/);
    expect(out.counted).toBe(false);
    expect(out.action).toBe('teleport');
  });

  it('answers input that is not an object or has no action', async () => {
    const t = setup();
    expectError(await t.run(null), /object/);
    expectError(await t.run('left_click'), /object/);
    expectError(await t.run({}), /"action" is required/);
    expectError(await t.run({ action: 42 }), /"action" is required/);
  });

  it('does not treat inherited names as actions', async () => {
    const t = setup();
    expectError(await t.run({ action: 'toString' }), /unknown action/);
    expectError(await t.run({ action: '__proto__' }), /unknown action/);
  });

  it('treats null parameters as absent', async () => {
    const t = setup();
    expectOk(await t.run({ action: 'screenshot', coordinate: null, text: null }));
    expectOk(await t.run({ action: 'left_click', coordinate: [1, 1], text: null }));
  });

  it('counts a bad call of a known action', async () => {
    const t = setup();
    const out = expectError(await t.run({ action: 'left_click', coordinate: [1, 2, 3] }), /\[x, y\]/);
    expect(out.counted).toBe(true);
    expect(out.label).toBe('left_click (rejected)');
  });
});
