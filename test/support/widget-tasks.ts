import type { PlaywrightTab } from '../../src/browser/playwright-tab.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import type { ToolResultBlock } from '../../src/model/types.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionReport, ActionSpace } from '../../src/toolset/types.js';
import { neverAborted } from './env.js';

/**
 * The widget conformance suite's tasks and find's description set, on the pages of real
 * component libraries (test/fixtures/widgets/, served by widget-site.ts). Shared by the test
 * (test/integration/widgets.test.ts) and `npm run bench -- widgets`.
 *
 * Each task is what an ideal agent does with only the toolset's answers: find the control in
 * words (the reference comes from find's first line), then form_input. The value is read back
 * from the component's own state through its JavaScript API, never from our reading of the page.
 */
export interface WidgetTask {
  widget: string;
  page: string;
  /**
   * A control to use first, found by this description: clicked (the button that opens a dialog),
   * or given a value (the filter that brings a row of a virtualized grid into the page).
   */
  prepare?: { find: string; value?: string };
  find: string;
  /** What find's first line must start with. */
  expect: RegExp;
  value: string | boolean;
  /** An expression in the page that reads the component's state (a JSON value). */
  state: string;
  /** The host of the frame whose own state `state` reads (a frame of another site), when not the page's. */
  frame?: string;
  want: unknown;
}

export const WIDGET_TASKS: readonly WidgetTask[] = [
  { widget: 'tom-select single', page: 'tom-select.html', find: 'customer dropdown', expect: /^combobox "Customer"/, value: 'Vandelay Imports', state: 'customerSelect.getValue()', want: 'c12' },
  { widget: 'tom-select multi', page: 'tom-select.html', find: 'tags', expect: /^combobox "Tags"/, value: 'Urgent, VIP', state: 'tagsSelect.getValue()', want: ['urgent', 'vip'] },
  { widget: 'select2 single', page: 'select2.html', find: 'country', expect: /^combobox "Choose a country"/, value: 'Germany', state: "[$('#country').val(), $('#country').select2('data')[0].text]", want: ['DE', 'Germany'] },
  { widget: 'select2 multi', page: 'select2.html', find: 'carriers field', expect: /^(combobox|searchbox)/, value: 'UPS, La Poste', state: "$('#carriers').val()", want: ['ups', 'post'] },
  { widget: 'flatpickr pop-up', page: 'flatpickr.html', find: 'delivery date', expect: /^textbox "Delivery date"/, value: '2027-02-14', state: "deliveryPicker.selectedDates.map((d) => deliveryPicker.formatDate(d, 'Y-m-d'))", want: ['2027-02-14'] },
  { widget: 'flatpickr typed', page: 'flatpickr.html', find: 'invoice date', expect: /^textbox "Invoice date"/, value: '03/12/2026', state: "invoicePicker.selectedDates.map((d) => invoicePicker.formatDate(d, 'Y-m-d'))", want: ['2026-12-03'] },
  { widget: 'Quill editor', page: 'quill.html', find: 'reply text editor', expect: /^textbox "Reply text"/, value: 'Thanks, fixed in 2.3', state: 'replyEditor.getText().trim()', want: 'Thanks, fixed in 2.3' },
  { widget: 'ProseMirror editor', page: 'prosemirror.html', find: 'summary editor', expect: /^textbox "Summary"/, value: 'Invoices are now sent on the 1st.', state: 'articleView.state.doc.textContent', want: 'Invoices are now sent on the 1st.' },
  { widget: 'Shoelace input', page: 'shoelace.html', find: 'display name', expect: /^textbox "Display name"/, value: 'Ada L.', state: "document.getElementById('display-name').value", want: 'Ada L.' },
  { widget: 'Shoelace select', page: 'shoelace.html', find: 'language select', expect: /^combobox "Language"/, value: 'Deutsch', state: "document.getElementById('language').value", want: 'de' },
  { widget: 'Shoelace switch', page: 'shoelace.html', find: 'email notifications switch', expect: /^switch "Email notifications"/, value: true, state: "document.getElementById('notifications').checked", want: true },
  { widget: 'Fluent switch (role=switch host)', page: 'fluent.html', find: 'weekly digest switch', expect: /^switch "Weekly digest"/, value: true, state: "document.getElementById('digest').checked", want: true },
  { widget: 'Fluent checkbox (role=checkbox host)', page: 'fluent.html', find: 'text messages', expect: /^checkbox "Text messages"/, value: true, state: "document.getElementById('sms').checked", want: true },
  { widget: 'Fluent combobox', page: 'fluent.html', find: 'region combobox', expect: /^combobox "Region"/, value: 'Asia Pacific', state: "document.getElementById('region').value", want: 'Asia Pacific' },
  { widget: 'Fluent modal dialog', page: 'fluent.html', prepare: { find: 'edit contact button' }, find: 'phone number', expect: /^textbox "Phone number".*in dialog "Contact details"/, value: '+44 20 7946 0958', state: "document.getElementById('phone').value", want: '+44 20 7946 0958' },
  { widget: 'Tabulator virtualized grid (row 1,500 of 2,000)', page: 'tabulator.html', prepare: { find: 'filter invoices', value: 'INV-1500' }, find: 'amount of INV-1500', expect: /^gridcell "1599" .*row "INV-1500"; column "Amount"/, value: '1750', state: "invoiceGrid.getData().find((r) => r.invoice === 'INV-1500').amount", want: 1750 },
  { widget: 'order form in a same-origin iframe (tom-select)', page: 'embedded.html', find: 'customer dropdown', expect: /^combobox "Customer"/, value: 'Vandelay Imports', state: "document.getElementById('legacy').contentWindow.customerSelect.getValue()", want: 'c12' },
  { widget: 'order form in a cross-origin iframe (tom-select)', page: 'embedded.html?legacy-host=legacy.test', find: 'customer dropdown', expect: /^combobox "Customer"/, value: 'Vandelay Imports', state: 'customerSelect.getValue()', frame: 'legacy.test', want: 'c12' },
  { widget: 'Shoelace checkbox', page: 'shoelace.html', find: 'accept terms checkbox', expect: /^checkbox "I accept the terms"/, value: true, state: "document.getElementById('terms').checked", want: true },
];

/** Descriptions a person would write for the controls of those pages, with the line find must rank first. */
export const FIND_DESCRIPTIONS: ReadonlyArray<{ page: string; query: string; expect: RegExp }> = [
  { page: 'tom-select.html', query: 'customer', expect: /^combobox "Customer"/ },
  { page: 'tom-select.html', query: 'customer picker', expect: /^combobox "Customer"/ },
  { page: 'tom-select.html', query: 'tags field', expect: /^combobox "Tags"/ },
  { page: 'tom-select.html', query: 'create order button', expect: /^button "Create order"/ },
  { page: 'tom-select.html', query: 'new order heading', expect: /^heading "New order"/ },
  { page: 'select2.html', query: 'country dropdown', expect: /^combobox "Choose a country"/ },
  { page: 'select2.html', query: 'country', expect: /^combobox "Choose a country"/ },
  { page: 'select2.html', query: 'carriers', expect: /^(combobox|searchbox) .*"Carriers"|^searchbox "Choose carriers"/ },
  { page: 'select2.html', query: 'save address button', expect: /^button "Save address"/ },
  { page: 'flatpickr.html', query: 'delivery date', expect: /^textbox "Delivery date"/ },
  { page: 'flatpickr.html', query: 'delivery date field', expect: /^textbox "Delivery date"/ },
  { page: 'flatpickr.html', query: 'invoice date input', expect: /^textbox "Invoice date"/ },
  { page: 'flatpickr.html', query: 'book slot', expect: /^button "Book slot"/ },
  { page: 'quill.html', query: 'reply editor', expect: /^textbox "Reply text"/ },
  { page: 'quill.html', query: 'bold button', expect: /^button "bold"/ },
  { page: 'quill.html', query: 'bullet list button', expect: /^button "list: bullet"/ },
  { page: 'quill.html', query: 'send reply', expect: /^button "Send reply"/ },
  { page: 'quill.html', query: 'italic', expect: /^button "italic"/ },
  { page: 'shoelace.html', query: 'display name field', expect: /^textbox "Display name"/ },
  { page: 'shoelace.html', query: 'language dropdown', expect: /^combobox "Language"/ },
  { page: 'shoelace.html', query: 'notifications toggle', expect: /^switch "Email notifications"/ },
  { page: 'shoelace.html', query: 'terms checkbox', expect: /^checkbox "I accept the terms"/ },
  { page: 'shoelace.html', query: 'save settings button', expect: /^button "Save settings"/ },
  { page: 'shoelace.html', query: 'accept the terms', expect: /^checkbox "I accept the terms"/ },
  { page: 'fluent.html', query: 'weekly digest', expect: /^switch "Weekly digest"/ },
  { page: 'fluent.html', query: 'sms checkbox', expect: /^checkbox "Text messages"/ },
  { page: 'fluent.html', query: 'region', expect: /^combobox "Region"/ },
  { page: 'fluent.html', query: 'save preferences', expect: /^button "Save preferences"/ },
  { page: 'fluent.html', query: 'edit contact', expect: /^button "Edit contact"/ },
  { page: 'tom-select.html', query: 'order form submit', expect: /^button "Create order"/ },
  { page: 'select2.html', query: 'shipping country select', expect: /^combobox "Choose a country"/ },
  { page: 'quill.html', query: 'underline', expect: /^button "underline"/ },
  { page: 'prosemirror.html', query: 'summary', expect: /^textbox "Summary"/ },
  { page: 'tabulator.html', query: 'invoice filter', expect: /^searchbox "Filter invoices"/ },
  { page: 'tabulator.html', query: 'amount column header', expect: /^columnheader "Amount"/ },
  { page: 'tabulator.html', query: 'customer of INV-0003', expect: /^gridcell "Customer 3"/ },
  { page: 'prosemirror.html', query: 'publish button', expect: /^button "Publish article"/ },
  { page: 'embedded.html', query: 'tags in the order form', expect: /^combobox "Tags"/ },
  { page: 'embedded.html', query: 'legacy order frame', expect: /^iframe "Legacy order form"/ },
  { page: 'embedded.html?legacy-host=legacy.test', query: 'tags in the order form', expect: /^combobox "Tags"/ },
  { page: 'checkout.html?pay=pay.test', query: 'card number', expect: /^textbox "Card number"/ },
  { page: 'checkout.html?pay=pay.test', query: 'pay button', expect: /^button "Pay 84\.00 EUR"/ },
];

export interface WidgetHarness {
  session: BrowserSession;
  space: ActionSpace;
  /** Characters of every tool result the agent read (text only), and the calls it made. */
  read: { chars: number; calls: number };
  call(name: string, input?: Record<string, unknown>): Promise<ActionReport>;
  /** Reads a JSON value in the page, or in the frame of another site served by `frameHost`. */
  state(expression: string, frameHost?: string): Promise<unknown>;
  close(): Promise<void>;
}

export const resultText = (result: ToolResultBlock): string => result.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');

export async function openWidgetPage(sandbox: BrowserSandbox, origin: string, page: string): Promise<WidgetHarness> {
  const signal = new AbortController().signal;
  // Two more sites of the allow-list, by host and port, embedded as frames of another origin.
  const port = new URL(origin).port;
  const allowedDomains = ['widgets.test', `pay.test:${port}`, `legacy.test:${port}`];
  const session = await sandbox.openSession({ executionId: 'widgets', viewport: { width: 1000, height: 700 }, allowedDomains, onBlocked: () => {} }, signal);
  const space = createActionSpace(
    { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
    { session, secrets: createSecretVault({}, undefined), allowJavascript: false },
  );
  const navigated = await session.navigate(`${origin}/${page}`, signal);
  if (!navigated.ok) throw new Error(`could not open ${page}: ${navigated.error}`);
  await session.settle(signal);
  const read = { chars: 0, calls: 0 };
  let n = 0;
  return {
    session,
    space,
    read,
    call: async (name, input = {}) => {
      const report = await space.run({ type: 'tool_use', id: `toolu_${++n}`, name, input, toolset_name: 'browser' }, { signal });
      read.calls++;
      read.chars += resultText(report.result).length + JSON.stringify(input).length;
      return report;
    },
    state: async (expression, frameHost) => {
      if (frameHost) {
        const frame = (session.tab() as PlaywrightTab).page.frames().find((f) => URL.canParse(f.url()) && new URL(f.url()).hostname === frameHost);
        if (!frame) throw new Error(`no frame of ${frameHost} on the page`);
        return frame.evaluate(`JSON.parse(JSON.stringify(${expression}))`) as Promise<unknown>;
      }
      const out = await session.tab()!.evaluate(`JSON.stringify(${expression})`, 5_000, neverAborted);
      if (!out.ok) throw new Error(out.error);
      return JSON.parse(out.value) as unknown;
    },
    close: () => session.close(),
  };
}

/** The calls the ideal agent makes for a task: find and form_input, after a find and a click or form_input to prepare. */
export const callsOf = (task: WidgetTask): number => (task.prepare ? 4 : 2);

/** One task as the ideal agent does it: find, form_input by the reference of find's first line. */
export async function runWidgetTask(h: WidgetHarness, task: WidgetTask): Promise<{ ok: boolean; detail: string; state: unknown }> {
  if (task.prepare) {
    const ref = /\[(ref_\d+)\]/.exec(resultText((await h.call('find', { query: task.prepare.find })).result))?.[1];
    if (!ref) return { ok: false, detail: `nothing found for "${task.prepare.find}"`, state: undefined };
    const value = task.prepare.value;
    const done = value === undefined ? await h.call('left_click', { target: { type: 'ref', ref } }) : await h.call('form_input', { target: { type: 'ref', ref }, value });
    if (!done.ok) return { ok: false, detail: resultText(done.result), state: undefined };
  }
  const found = resultText((await h.call('find', { query: task.find })).result);
  const first = found.split('\n')[0] ?? '';
  const ref = /\[(ref_\d+)\]/.exec(first)?.[1];
  if (!task.expect.test(first) || !ref) return { ok: false, detail: `find ranked first: ${first}`, state: undefined };
  const filled = await h.call('form_input', { target: { type: 'ref', ref }, value: task.value });
  const state = await h.state(task.state, task.frame);
  const ok = filled.ok && JSON.stringify(state) === JSON.stringify(task.want);
  return { ok, detail: resultText(filled.result), state };
}

/** find over the description set: how many rank the intended element first, and the misses. */
export async function measureFindHits(sandbox: BrowserSandbox, origin: string): Promise<{ hits: number; total: number; misses: string[] }> {
  let hits = 0;
  const misses: string[] = [];
  const pages = [...new Set(FIND_DESCRIPTIONS.map((d) => d.page))];
  for (const page of pages) {
    const h = await openWidgetPage(sandbox, origin, page);
    try {
      for (const d of FIND_DESCRIPTIONS.filter((x) => x.page === page)) {
        const first = resultText((await h.call('find', { query: d.query })).result).split('\n')[0] ?? '';
        if (d.expect.test(first)) hits++;
        else misses.push(`${page} "${d.query}" → ${first}`);
      }
    } finally {
      await h.close();
    }
  }
  return { hits, total: FIND_DESCRIPTIONS.length, misses };
}
