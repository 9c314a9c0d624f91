/**
 * `find`: the elements of a page that answer a description in plain words ("search field",
 * "add to cart button", "the password box"). No model call: matching over the accessibility
 * tree is free, takes a few milliseconds, and on the fixture pages finds the intended element
 * first for every query of the benchmark set (bench/toolset.ts prints the hit rate).
 *
 * The query is split into words; words naming a kind of element ("button", "field",
 * "dropdown") ask for a role, the rest are matched against the element's name first, then the
 * words around it (placeholder, name/id attributes, the heading of its form). A word matches
 * exactly, as a synonym, or by a shared prefix of at least four letters ("e-mail"/"email",
 * "qty"/"quantity" through the synonym table). Elements in view win ties.
 */
import type { FoundElement } from '../browser/types.js';

/** Words that ask for a kind of element, and the roles that answer them. */
const ROLE_WORDS: Readonly<Record<string, readonly string[]>> = {
  button: ['button'],
  btn: ['button'],
  link: ['link'],
  field: ['textbox', 'searchbox', 'combobox', 'spinbutton'],
  input: ['textbox', 'searchbox', 'combobox', 'spinbutton', 'checkbox', 'radio', 'slider'],
  box: ['textbox', 'searchbox', 'combobox', 'checkbox'],
  textbox: ['textbox', 'searchbox'],
  textfield: ['textbox', 'searchbox'],
  textarea: ['textbox'],
  editor: ['textbox'],
  entry: ['textbox', 'searchbox'],
  dropdown: ['combobox', 'listbox'],
  select: ['combobox', 'listbox'],
  combobox: ['combobox'],
  menu: ['combobox', 'menu', 'menuitem', 'listbox'],
  list: ['list', 'listbox'],
  option: ['option', 'radio', 'menuitem'],
  checkbox: ['checkbox', 'switch'],
  check: ['checkbox'],
  tickbox: ['checkbox'],
  toggle: ['switch', 'checkbox'],
  switch: ['switch', 'checkbox'],
  radio: ['radio'],
  heading: ['heading'],
  title: ['heading'],
  header: ['heading', 'banner'],
  image: ['img'],
  picture: ['img'],
  logo: ['img', 'link'],
  icon: ['img', 'button', 'link'],
  tab: ['tab'],
  table: ['table'],
  row: ['row'],
  cell: ['cell'],
  slider: ['slider'],
  form: ['form'],
  dialog: ['dialog', 'alertdialog'],
  modal: ['dialog', 'alertdialog'],
  navigation: ['navigation'],
  nav: ['navigation'],
  paragraph: ['paragraph'],
  text: ['paragraph', 'textbox'],
  message: ['alert', 'status', 'paragraph'],
  error: ['alert', 'status', 'paragraph'],
};

/** Words with the same meaning on forms and buttons. */
const SYNONYMS: ReadonlyArray<readonly string[]> = [
  ['login', 'signin', 'log', 'sign', 'logon'],
  ['logout', 'signout'],
  ['register', 'signup', 'join', 'create'],
  ['submit', 'send', 'save', 'confirm', 'ok', 'apply'],
  ['search', 'find', 'lookup', 'query'],
  ['next', 'continue', 'proceed', 'forward'],
  ['back', 'previous', 'prev', 'return'],
  ['delete', 'remove', 'trash', 'discard'],
  ['cancel', 'close', 'dismiss'],
  ['email', 'mail', 'e-mail'],
  ['phone', 'telephone', 'tel', 'mobile'],
  ['zip', 'postcode', 'postal'],
  ['qty', 'quantity', 'amount', 'count'],
  ['user', 'username', 'login', 'account'],
  ['password', 'passwd', 'pwd', 'pass'],
  ['name', 'fullname'],
  ['address', 'street'],
  ['cart', 'basket', 'bag'],
  ['buy', 'purchase', 'checkout', 'order'],
  ['add', 'plus', 'new'],
  ['edit', 'modify', 'change', 'update'],
  ['date', 'day'],
  ['reference', 'ref', 'number', 'id'],
];

const INTERACTIVE_ROLES = new Set(['link', 'button', 'textbox', 'searchbox', 'combobox', 'listbox', 'option', 'checkbox', 'radio', 'switch', 'slider', 'spinbutton', 'menuitem', 'tab', 'clickable']);

/** Names longer than this many words count less per word found in them. */
const LONG_NAME_WORDS = 8;

/** Matches scoring under this share of the best one are left out. */
const RELATIVE_FLOOR = 0.4;

const STOP_WORDS = new Set(['the', 'a', 'an', 'to', 'of', 'for', 'on', 'in', 'at', 'with', 'and', 'or', 'my', 'your', 'this', 'that', 'element', 'page', 'where', 'which', 'is', 'it']);

const synonymsOf = (() => {
  const map = new Map<string, Set<string>>();
  for (const group of SYNONYMS) for (const word of group) map.set(word, new Set([...(map.get(word) ?? []), ...group]));
  return (word: string) => map.get(word) ?? new Set([word]);
})();

/** Lower-case words, plurals folded to their singular ("addresses" → "address", "cities" → "city"). */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/e-mail/g, 'email')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0)
    .map((w) => (w.length > 4 && w.endsWith('ies') ? `${w.slice(0, -3)}y` : w.length > 4 && /(ss|sh|ch|x)es$/.test(w) ? w.slice(0, -2) : w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w));
}

function commonPrefix(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** How well one query word matches a set of words: 1 exact, 0.8 synonym, 0.6 nearly the same word, else 0. */
function wordScore(word: string, against: readonly string[]): number {
  let best = 0;
  const synonyms = synonymsOf(word);
  for (const other of against) {
    if (other === word) return 1;
    if (synonyms.has(other)) best = Math.max(best, 0.8);
    else {
      // "addr" and "address", "organisation" and "organization": most of the longer word shared.
      const shared = commonPrefix(word, other);
      if (shared >= 4 && (shared === Math.min(word.length, other.length) || shared >= 0.75 * Math.max(word.length, other.length))) best = Math.max(best, 0.6);
    }
  }
  return best;
}

/**
 * What else a description may name, and how much a word found there counts against one in the
 * name (1): the browser's description, the text before a field, the table headers, the words of
 * its attributes, the heading it comes under, the region it is in, its address.
 */
function contextSources(c: FoundElement): Array<[number, string[]]> {
  const sources: Array<[number, string[]]> = [];
  const add = (weight: number, text: string | undefined) => {
    if (text) sources.push([weight, words(text)]);
  };
  add(0.8, c.description);
  if (c.name) add(0.8, c.label);
  add(0.7, c.column);
  add(0.7, c.row);
  add(0.6, c.context);
  add(0.6, c.heading);
  add(0.6, c.region);
  add(0.5, c.href?.replace(/^[a-z]+:\/\/[^/]+/i, ''));
  return sources;
}

/** Indices of `candidates` that match `query`, best first; those that match nothing are left out. */
export function rankElements(query: string, candidates: readonly FoundElement[]): number[] {
  const all = words(query).filter((w) => !STOP_WORDS.has(w));
  // The kind asked for is said last, as English puts its head noun: a kind word before it
  // describes it ("title" in "Post title field") and is matched as a plain word.
  const last = all.at(-1);
  const kindWords = last !== undefined && ROLE_WORDS[last] ? [last] : [];
  const plainTerms = all.slice(0, all.length - kindWords.length);
  const scored: Array<{ i: number; score: number; reachable: boolean }> = [];
  for (const c of candidates) {
    // A field named by nothing but the text before it is named by that text.
    const name = words(c.name || c.label || '');
    // A kind word the name itself holds ("Text messages", "Title") is a word of the name here, not
    // a kind asked for; so is one naming the kind of region the element sits in ("the order form's submit").
    const named = kindWords.filter((w) => name.includes(w) || (c.regionRole !== undefined && (ROLE_WORDS[w] ?? []).includes(c.regionRole)));
    const terms = named.length ? [...plainTerms, ...named] : plainTerms;
    const roles = new Set(kindWords.filter((w) => !named.includes(w)).flatMap((w) => ROLE_WORDS[w] ?? []));
    const sources = contextSources(c);
    let score = 0;
    let matched = 0;
    // A long name (a wrapper named by all the text inside it) matches many descriptions a little.
    const specific = name.length > LONG_NAME_WORDS ? Math.max(0.5, LONG_NAME_WORDS / name.length) : 1;
    for (const term of terms) {
      let best = wordScore(term, name) * specific;
      for (const [weight, against] of sources) if (best < weight) best = Math.max(best, wordScore(term, against) * weight);
      if (best > 0) matched++;
      score += best;
    }
    const roleMatch = roles.size === 0 ? 0 : roles.has(c.role) ? 1 : -0.5;
    if (terms.length === 0) {
      // "the button": any element of that kind, the visible ones first.
      if (roleMatch <= 0) continue;
      score = roleMatch;
    } else {
      if (matched === 0) continue;
      // Every word of the description found beats most of them found. A kind word asked for counts
      // as a word too: found when the element is of that kind or its name holds it ("Post title
      // field": a button "Post" is neither a field nor a title, a textbox "Add title" is both).
      const kindsFound = kindWords.every((w) => named.includes(w) || (ROLE_WORDS[w] ?? []).includes(c.role));
      score = score / terms.length + (matched === terms.length && kindsFound ? 0.5 : 0) + roleMatch * 0.6;
      // A name that is exactly the description is what was meant.
      if (name.join(' ') === terms.join(' ')) score += 0.5;
    }
    // Ties go to what one acts on, then to what is in view.
    // A control of a known kind before an element that is only styled as clickable (often its wrapper, of the same name).
    if (INTERACTIVE_ROLES.has(c.role)) score += c.role === 'clickable' ? 0.05 : 0.1;
    if (c.inView) score += 0.05;
    if (score > 0) scored.push({ i: c.i, score, reachable: c.unreachable !== true });
  }
  // An element that can never be brought into view (a fly-out submenu parked off the page) cannot
  // be clicked: it comes after every one that can, whatever its score.
  scored.sort((a, b) => Number(b.reachable) - Number(a.reachable) || b.score - a.score || a.i - b.i);
  // Far weaker matches than the best are noise, not alternatives.
  const floor = Math.max(0, ...scored.map((s) => s.score)) * RELATIVE_FLOOR;
  return scored.filter((s) => s.score >= floor).map((s) => s.i);
}
