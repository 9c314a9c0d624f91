/** The demo's workflow and input: the shop order, as the demo, its recording and the tests use it. */
export const DEMO_WORKFLOW = (startUrl: string) => ({
  name: 'Place a shop order',
  description: 'Signs in to the Acme shop and places an order with the given reference.',
  prompt: 'Sign in to the Acme shop with the user and password from the input, then place an order with the given reference. Report the order id the shop shows.',
  allowedDomains: ['shop.test'],
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

/**
 * What an agent does on the shop for DEMO_INPUT, one tool call per model turn: the script the
 * bundled recording was made from (demo/record.ts) and the tests' scripted model follows.
 */
export const DEMO_TOOL_CALLS: ReadonlyArray<{ name: 'computer' | 'finish'; input: Record<string, unknown> }> = [
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
