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
