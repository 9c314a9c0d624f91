/** The demo's workflow and input: the shop order, as the demo, its recording, the tests and the benchmarks use it. */
export const DEMO_WORKFLOW = (startUrl: string) => ({
  name: 'Place a shop order',
  description: 'Signs in to the Acme shop and places an order with the given reference.',
  prompt: 'Sign in to the Acme shop with the user and password from the input, then place an order with the given reference. Report the order id the shop shows.',
  // The shop's name with its port: shop.test is mapped to loopback, where other services listen too.
  allowedDomains: [new URL(startUrl).host],
  startUrl,
  steps: ['Sign in with the user and password', 'Enter the reference and place the order', 'Read the order id on the confirmation page'],
  payloadSchema: {
    type: 'object',
    required: ['user', 'password', 'reference'],
    properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true }, reference: { type: 'string' } },
  },
  outputSchema: { type: 'object', required: ['orderId'], properties: { orderId: { type: 'string' } } },
});
export const DEMO_INPUT = { user: 'ann', password: 'demo-Pa55word', reference: 'PO-778' };

export interface DemoCall {
  name: string;
  input: Record<string, unknown>;
  /** Set for a member of a client toolset (`browser`, `computer`). */
  toolset_name?: string;
}

/**
 * What an agent does on the shop with the computer tool (`toolset: "computer"`), one call per
 * model turn: what the tests' scripted model plays for computer use.
 */
export const DEMO_COMPUTER_CALLS: ReadonlyArray<DemoCall> = [
  { name: 'computer', input: { action: 'left_click', coordinate: [250, 120] } },
  { name: 'computer', input: { action: 'type', text: 'ann' } },
  { name: 'computer', input: { action: 'left_click', coordinate: [250, 180] } },
  { name: 'computer', input: { action: 'type', text: '{{password}}' } },
  { name: 'computer', input: { action: 'left_click', coordinate: [175, 240] } },
  { name: 'computer', input: { action: 'triple_click', coordinate: [250, 120] } },
  { name: 'computer', input: { action: 'type', text: 'PO-778' } },
  { name: 'computer', input: { action: 'key', text: 'Return' } },
  { name: 'finish', input: { status: 'completed', output: { orderId: 'A-1001' } } },
];

/** A computer tool call as the computer toolset's member call: `{ action: 'left_click', … }` → member `left_click`. */
export function asComputerMember(call: DemoCall): DemoCall {
  if (call.name !== 'computer') return call;
  const { action, ...input } = call.input;
  return { name: String(action), input, toolset_name: 'computer' };
}

/** The reference the worker gave the element `role "name"` in a read_page or find text. */
export function refIn(text: string, role: string, name: string): string {
  const line = text.split('\n').find((l) => l.trim().startsWith(`${role} "${name}"`));
  const found = line && /\[(ref_\d+)\]/.exec(line);
  if (!found) throw new Error(`the page shows no ${role} "${name}"; it shows:\n${text.slice(0, 2000)}`);
  return found[1]!;
}

/** Which turn of its execution a Messages API request asks for (0 for the first): the model's answers so far. */
export function turnOf(requestBody: unknown): number {
  const messages = (requestBody as { messages?: Array<{ role: string }> } | null)?.messages ?? [];
  return messages.filter((m) => m.role === 'assistant').length;
}

/** The text the worker sent in its latest user message (the opening, or the tool results), from a Messages API request body. */
export function lastObservation(requestBody: unknown): string {
  const messages = (requestBody as { messages?: Array<{ role: string; content: unknown }> } | null)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const texts: string[] = [];
  const collect = (blocks: unknown) => {
    if (typeof blocks === 'string') return void texts.push(blocks);
    if (!Array.isArray(blocks)) return;
    for (const block of blocks as Array<{ type: string; text?: string; content?: unknown }>) {
      if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
      if (block.type === 'tool_result') collect(block.content);
    }
  };
  collect(last?.content);
  return texts.join('\n');
}

const browser = (name: string, input: Record<string, unknown>): DemoCall => ({ name, input, toolset_name: 'browser' });
const ref = (value: string) => ({ type: 'ref', ref: value });

/**
 * What an agent does on the shop with the browser toolset, turn by turn: each turn takes its
 * references from what the worker showed last (the opening's interactive elements, then its own
 * read_page results), as a model would. Three turns: sign in and read the next page; enter the
 * reference, place the order and read the confirmation; download the receipt and finish with the
 * order id read from the page.
 */
export function demoToolsetTurn(turn: number, observation: string, input: { user: string; reference: string } = DEMO_INPUT): DemoCall[] {
  switch (turn) {
    case 0:
      return [
        browser('form_input', { target: ref(refIn(observation, 'textbox', 'User')), value: input.user }),
        browser('form_input', { target: ref(refIn(observation, 'textbox', 'Password')), value: '{{password}}' }),
        browser('left_click', { target: ref(refIn(observation, 'button', 'Sign in')) }),
        browser('read_page', { filter: 'interactive' }),
      ];
    case 1:
      return [
        browser('form_input', { target: ref(refIn(observation, 'textbox', 'Reference')), value: input.reference }),
        browser('left_click', { target: ref(refIn(observation, 'button', 'Place order')) }),
        browser('read_page', {}),
      ];
    case 2: {
      const orderId = /Order (\S+) confirmed/.exec(observation)?.[1];
      if (!orderId) return [{ name: 'finish', input: { status: 'failed', reason: `no order id on the page: ${observation.slice(0, 300)}` } }];
      return [browser('left_click', { target: ref(refIn(observation, 'link', 'Download the receipt')) }), { name: 'finish', input: { status: 'completed', output: { orderId } } }];
    }
    default:
      throw new Error(`the demo script has no turn ${turn + 1}`);
  }
}
