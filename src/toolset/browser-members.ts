/**
 * The browser toolset's members (docs/action-spaces.md): the one table the member sets derive from.
 * `reads`: only reads the page, so it is not counted as an action
 * (docs/counters-and-artifacts.md#counters) and the page needs no settling after it.
 * `switchesTab`: acts on a tab, so a call naming another tab makes that one active first, as a
 * person would.
 */
const MEMBERS = {
  navigate: { reads: false, switchesTab: true },
  screenshot: { reads: true, switchesTab: true },
  zoom: { reads: true, switchesTab: true },
  left_click: { reads: false, switchesTab: true },
  right_click: { reads: false, switchesTab: true },
  middle_click: { reads: false, switchesTab: true },
  double_click: { reads: false, switchesTab: true },
  triple_click: { reads: false, switchesTab: true },
  hover: { reads: false, switchesTab: true },
  left_click_drag: { reads: false, switchesTab: true },
  left_mouse_down: { reads: false, switchesTab: true },
  left_mouse_up: { reads: false, switchesTab: true },
  mouse_move: { reads: false, switchesTab: true },
  scroll: { reads: false, switchesTab: true },
  scroll_to: { reads: false, switchesTab: true },
  type: { reads: false, switchesTab: true },
  key: { reads: false, switchesTab: true },
  hold_key: { reads: false, switchesTab: true },
  form_input: { reads: false, switchesTab: true },
  read_page: { reads: true, switchesTab: false },
  find: { reads: true, switchesTab: false },
  get_page_text: { reads: true, switchesTab: false },
  wait: { reads: false, switchesTab: true },
  file_upload: { reads: false, switchesTab: true },
  read_console: { reads: true, switchesTab: false },
  read_network: { reads: true, switchesTab: false },
  javascript_exec: { reads: false, switchesTab: true },
  new_tab: { reads: false, switchesTab: false },
  list_tabs: { reads: true, switchesTab: false },
  switch_tab: { reads: false, switchesTab: false },
  close_tab: { reads: false, switchesTab: false },
} as const satisfies Record<string, { reads: boolean; switchesTab: boolean }>;

export type BrowserMember = keyof typeof MEMBERS;

const entries = Object.entries(MEMBERS) as Array<[BrowserMember, (typeof MEMBERS)[BrowserMember]]>;

/** Every member the worker carries out; a call to another name is refused. */
export const KNOWN_MEMBERS: ReadonlySet<string> = new Set(entries.map(([name]) => name));
/** Members that only read. */
export const READ_MEMBERS: ReadonlySet<string> = new Set(entries.filter(([, m]) => m.reads).map(([name]) => name));
/** Members that make the tab they name active first. */
export const TAB_SWITCHING_MEMBERS: ReadonlySet<string> = new Set(entries.filter(([, m]) => m.switchesTab).map(([name]) => name));
