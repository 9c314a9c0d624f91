/**
 * The final page as the final check reads it (docs/run-cache.md#the-final-check): content
 * first. A read of the whole page is cut into its landmarks: the main landmark's subtree is shown
 * first and whole (up to the read's budget), and each navigation, banner, menu or footer outside
 * it is summarised in one line (its role and name, how many links and items, the first few
 * names), so an admin's menus cannot fill the view before the record's fields. A page with no
 * main landmark is read the same way, its navigation summarised in place; when that is more than
 * the budget, its forms (a record's fields: an admin's change page) come first and the rest
 * after. Pure: it works on the read's lines (`role "name" [ref_N] …`, indented two spaces a level).
 */

/** Landmarks and menus a view summarises instead of listing. */
const CHROME = /^(navigation|banner|contentinfo|menubar|menu|complementary|toolbar)\b/;
/** Names a summary line lists before it counts the rest. */
const SUMMARY_NAMES = 6;

export interface RecordView {
  /** The lines to show, content first, cut at the budget. */
  text: string;
  /** Whether a main landmark was found (else the page was read whole, chrome summarised). */
  main: boolean;
  /** The text of every line of the page read, for what the page shows at all. */
  pageText: string;
}

export function recordView(lines: readonly string[], maxChars: number): RecordView {
  const mainAt = lines.findIndex((line) => /^main\b/.test(line.trim()));
  let body = mainAt >= 0 ? subtree(lines, mainAt) : [...lines];
  let rest = mainAt >= 0 ? [...lines.slice(0, mainAt), ...lines.slice(mainAt + body.length)] : [];
  if (mainAt < 0 && size(summariseChrome(body)) > maxChars) {
    // No main landmark, and more than the budget: the page's forms (a record's fields) first.
    const forms = formsOf(lines);
    if (forms.length > 0) {
      const inForm = new Set(forms.flatMap(({ at, length }) => Array.from({ length }, (_v, i) => at + i)));
      body = lines.filter((_l, i) => inForm.has(i));
      rest = lines.filter((_l, i) => !inForm.has(i));
    }
  }
  const shown = summariseChrome(body);
  const around = summariseChrome(rest);
  const chrome = around.filter((line) => line.includes(' (summarised): '));
  const elsewhere = around.filter((line) => !line.includes(' (summarised): ') && !/^\s*(generic|none)?\s*$/.test(line));
  const parts = [...shown];
  if (elsewhere.length > 0) parts.push('Elsewhere on the page:', ...elsewhere);
  if (chrome.length > 0) parts.push('Navigation and menus (summarised):', ...chrome.map((l) => `  ${l.trim()}`));
  let text = '';
  for (const line of parts) {
    if (text.length + line.length + 1 > maxChars) {
      text += '…';
      break;
    }
    text += `${line}\n`;
  }
  return { text: text.trimEnd() || '(nothing readable on the page)', main: mainAt >= 0, pageText: lines.join('\n') };
}

function size(lines: readonly string[]): number {
  return lines.reduce((sum, line) => sum + line.length + 1, 0);
}

/** The outermost forms of a read, outside its menus: where each starts and how many lines it has. */
function formsOf(lines: readonly string[]): Array<{ at: number; length: number }> {
  const out: Array<{ at: number; length: number }> = [];
  for (let i = 0; i < lines.length; ) {
    const head = lines[i]!.trim();
    if (CHROME.test(head) || /^form\b/.test(head)) {
      const length = subtree(lines, i).length;
      if (/^form\b/.test(head)) out.push({ at: i, length });
      i += length;
    } else i++;
  }
  return out;
}

/** The line at `at` and the lines nested under it. */
function subtree(lines: readonly string[], at: number): string[] {
  const depth = indent(lines[at]!);
  let end = at + 1;
  while (end < lines.length && indent(lines[end]!) > depth) end++;
  return lines.slice(at, end);
}

/** The lines with each menu-like landmark's subtree replaced by one summary line. */
function summariseChrome(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    const line = lines[i]!;
    if (!CHROME.test(line.trim())) {
      out.push(line);
      i++;
      continue;
    }
    const tree = subtree(lines, i);
    out.push(summaryLine(tree));
    i += tree.length;
  }
  return out;
}

function summaryLine(tree: readonly string[]): string {
  const head = tree[0]!;
  const label = head.trim().replace(/\s*\[ref_\d+\].*$/, '');
  const inner = tree.slice(1).map((l) => l.trim());
  const links = inner.filter((l) => /^(link|menuitem|tab|button)\b/.test(l));
  const names = links.map((l) => /"((?:[^"\\]|\\.)*)"/.exec(l)?.[1]).filter((n): n is string => !!n);
  const listed = names.slice(0, SUMMARY_NAMES).join(', ');
  const more = names.length > SUMMARY_NAMES ? `, and ${names.length - SUMMARY_NAMES} more` : '';
  return `${' '.repeat(indent(head))}${label} (summarised): ${links.length} link${links.length === 1 ? '' : 's'} and items${listed ? `: ${listed}${more}` : ''}`;
}

function indent(line: string): number {
  return line.length - line.trimStart().length;
}
