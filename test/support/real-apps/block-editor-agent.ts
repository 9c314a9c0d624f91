/**
 * A scripted model that writes a post in the block editor (block-editor.ts) the way an agent
 * does: from the worker's own reads (`read_page` with `filter: "all"`), never from a fixed list
 * of turns, so it carries on from wherever a run is (an empty editor, a post half written by a
 * replay, the pre-publish panel, the post published). Input values are entered by reference
 * (`{{path}}`). A repair (its tools include `step_done`) does what the page still lacks, in the
 * same order; a final check (`verify_replay` its only tool) answers from the final page, as a
 * model that sees only that page would.
 */
import { formatPath } from '../../../src/contract/key-path.js';
import { finish, memberBlock, toolUseBlock, turn, type RecordedRequest, type ScriptedContentBlock, type ScriptedTurn } from '../scripted-model-server.js';
import { parseRead, squash, type PageElement } from './page-read.js';
import { turnLog } from './turn-log.js';
import { actedHere, isFinalCheck, isRepair, lastUserText, pageToActOn, type RequestBody } from './request-read.js';

export interface PostInput {
  title: string;
  paragraphs: string[];
  category: string;
  tags: string[];
}

export const POST_PROMPT =
  'In the blog editor, write a new post: the title from the input, each paragraph of the input as a paragraph block of its own (in order), ' +
  'choose the category from the input in the Categories panel, add each tag of the input in the Tags panel, then publish the post and report its address.';

export function postWorkflow(origin: string, host: string): Record<string, unknown> {
  return {
    name: 'Publish a blog post',
    prompt: POST_PROMPT,
    allowedDomains: [host],
    startUrl: `${origin}/wp-admin/post-new.php`,
    payloadSchema: { type: 'object', required: ['title', 'paragraphs', 'category', 'tags'] },
    outputSchema: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } },
  };
}

export interface PostAgentLog {
  turns: string[];
  lastSeen: string;
}

const ref = (path: Array<string | number>) => `{{${formatPath(path.map(String))}}}`;
const readAll = (): ScriptedContentBlock => memberBlock('read_page', { filter: 'all' });
const act = (...blocks: ScriptedContentBlock[]): ScriptedTurn => turn(...blocks, readAll());
const click = (element: PageElement): ScriptedContentBlock => memberBlock('left_click', { target: { type: 'ref', ref: element.ref } });
const type = (text: string): ScriptedContentBlock => memberBlock('type', { text });
const key = (text: string): ScriptedContentBlock => memberBlock('key', { text });

export function postAgent(input: PostInput): { script: (request: RecordedRequest) => ScriptedTurn; log: PostAgentLog } {
  const log: PostAgentLog = { turns: [], lastSeen: '' };
  const { note, count } = turnLog(log.turns, 40);

  const script = (request: RecordedRequest): ScriptedTurn => {
    const body = request.body as RequestBody;
    if (isFinalCheck(body)) return verify(body);
    const spent = count();
    if (spent) return spent;
    const repair = isRepair(body);
    // Done once it acted, unless all it did last was open a panel: the step's value is still to enter.
    const opened = ['open categories', 'open tags'].includes(log.turns.at(-1) ?? '');
    if (repair && actedHere(body) && !opened) return note('step done', turn(toolUseBlock('step_done', { note: 'did the step on this page' })));
    // A repair shows the page with its first message (and again after each turn): acted on at once.
    const seen = pageToActOn(body, repair);
    if (seen === undefined) return note('read', turn(readAll()));
    log.lastSeen = seen;
    const page = parseRead(seen);
    const named = (role: string, name: string) => page.find((e) => e.role === role && e.ref && e.name === name);

    const link = page.find((e) => e.role === 'link' && e.ref && /\?p=\d+$/.test(e.name));
    if (page.some((e) => e.role === 'heading' && e.name === 'Post published.') && link) return note('report', finish('completed', { url: link.name }));
    const confirm = page.filter((e) => e.role === 'button' && e.ref && e.name === 'Publish');
    if (page.some((e) => e.role === 'region' && e.name === 'Pre-publish checks') && confirm.length > 1) return note('confirm publish', act(click(confirm.at(-1)!)));

    const title = named('textbox', 'Add title');
    if (title && squash(title.value ?? '') !== squash(input.title)) return note('title', act(click(title), type(ref(['title']))));

    const blocks = page.filter((e) => e.role === 'document' && e.ref);
    const first = input.paragraphs.findIndex((p, i) => squash(blocks[i]?.value ?? '') !== squash(p));
    if (first >= 0) {
      const calls: ScriptedContentBlock[] = [];
      const at = blocks[first];
      if (at && squash(at.value ?? '') === '') calls.push(click(at));
      else if (at) return finish('failed', undefined, `block ${first + 1} holds other text: ${at.value ?? ''}`);
      else calls.push(click(blocks.at(-1)!), key('End'), key('Return'));
      calls.push(type(ref(['paragraphs', first])));
      for (let i = first + 1; i < input.paragraphs.length; i++) {
        if (blocks[i] && squash(blocks[i]!.value ?? '') !== '') break;
        calls.push(key('Return'), type(ref(['paragraphs', i])));
      }
      return note('paragraphs', act(...calls));
    }

    const categories = named('button', 'Categories');
    const category = named('combobox', 'Category');
    if (!category && categories) return note('open categories', act(click(categories)));
    if (category && category.value !== input.category) return note('category', act(memberBlock('form_input', { target: { type: 'ref', ref: category.ref }, value: ref(['category']) })));

    const tagsToggle = named('button', 'Tags');
    const tagInput = named('textbox', 'Add New Tag');
    const tokens = page.filter((e) => e.role === 'button' && e.name.startsWith('Remove ')).map((e) => squash(e.name.slice('Remove '.length)));
    const missing = input.tags.map((tag, i) => ({ tag, i })).filter(({ tag }) => !tokens.includes(squash(tag)));
    if (missing.length > 0) {
      if (!tagInput && tagsToggle) return note('open tags', act(click(tagsToggle)));
      // A tag already typed into the field (a replay stopped before its Return) only needs the Return.
      const typed = tagInput && missing.find(({ tag }) => squash(tagInput.value ?? '') === squash(tag));
      if (typed) return note('add the typed tag', act(click(tagInput), key('Return')));
      if (tagInput) return note('tags', act(click(tagInput), ...(squash(tagInput.value ?? '') !== '' ? [key('ctrl+a'), key('Delete')] : []), ...missing.flatMap(({ i }) => [type(ref(['tags', i])), key('Return')])));
    }

    if (repair) return note('step done', turn(toolUseBlock('step_done', { note: 'nothing left to do on this page' })));
    if (confirm.length > 0) return note('publish', act(click(confirm[0]!)));
    return finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`);
  };

  const verify = (body: RequestBody): ScriptedTurn => {
    const text = lastUserText(body);
    const page = parseRead(text);
    const link = page.find((e) => e.role === 'link' && /\?p=\d+$/.test(e.name));
    const published = page.some((e) => e.role === 'heading' && e.name === 'Post published.') || text.includes('Post published.');
    return turn(toolUseBlock('verify_replay', published && link ? { matches: true, reason: 'the post is published', output: { url: link.name } } : { matches: false, reason: 'the post is not published' }));
  };

  return { script, log };
}

/** A post for a first run, and another that differs from it in every field, with as many paragraphs and tags. */
export const FIRST_POST: PostInput = {
  title: 'Spring release notes',
  paragraphs: ['The spring release brings offline mode to every plan.', 'Upgrade from the settings page; nothing else changes.'],
  category: 'News',
  tags: ['release', 'offline'],
};
export const SECOND_POST: PostInput = {
  title: 'Autumn meetup in Lisbon',
  paragraphs: ['Join us on 14 October for talks and a workshop.', 'Seats are limited: register by the end of September.'],
  category: 'Events',
  tags: ['meetup', 'lisbon'],
};
