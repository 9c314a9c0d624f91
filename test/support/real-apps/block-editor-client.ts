/**
 * The block editor's page (bundled for the browser by block-editor.ts): a post editor in the
 * manner of a block-editor admin, built on ProseMirror. A title field named by its placeholder
 * ("Add title", empty as a caret holder U+FEFF), paragraph blocks each an editor of its own whose
 * accessible name is "Empty block; …" until it holds text and "Block: Paragraph" after (Return
 * at the end of a block opens the next one), sidebar panels "Categories" and "Tags" whose open
 * state the server keeps per user (they open as the user left them), a category select and a tag token field (Return
 * adds the token), a pre-publish panel and a post-publish panel that shows neither the body nor
 * the tags.
 */
import { baseKeymap } from 'prosemirror-commands';
import { keymap } from 'prosemirror-keymap';
import { Schema } from 'prosemirror-model';
import { EditorState } from 'prosemirror-state';
import { EditorView } from 'prosemirror-view';

const EMPTY = 'Empty block; start writing or type forward slash to choose a block';
const schema = new Schema({ nodes: { doc: { content: 'paragraph' }, paragraph: { content: 'text*', toDOM: () => ['p', 0], parseDOM: [{ tag: 'p' }] }, text: {} } });

interface Prefs {
  categories: boolean;
  tags: boolean;
}

const blocks: EditorView[] = [];
const tags: string[] = [];
const $ = (id: string) => document.getElementById(id)!;

function addBlock(after?: EditorView): EditorView {
  const mount = document.createElement('div');
  mount.className = 'block';
  const list = $('blocks');
  const at = after ? blocks.indexOf(after) + 1 : blocks.length;
  list.insertBefore(mount, list.children[at] ?? null);
  const view: EditorView = new EditorView(mount, {
    state: EditorState.create({
      schema,
      plugins: [
        keymap({
          Enter: (state) => {
            // Return at the end of a block opens the next block, as a block editor does.
            if (state.selection.$head.parentOffset < state.selection.$head.parent.content.size) return false;
            addBlock(view).focus();
            return true;
          },
        }),
        keymap(baseKeymap),
      ],
    }),
    attributes: (state) => ({
      role: 'document',
      class: 'paragraph-block',
      'aria-label': state.doc.textContent ? 'Block: Paragraph' : EMPTY,
      'aria-multiline': 'true',
    }),
  });
  blocks.splice(at, 0, view);
  return view;
}

function renderTags(): void {
  const list = $('tag-tokens');
  list.replaceChildren(
    ...tags.map((tag, i) => {
      const item = document.createElement('li');
      item.textContent = tag;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.textContent = '×';
      remove.setAttribute('aria-label', `Remove ${tag}`);
      remove.onclick = () => {
        tags.splice(i, 1);
        renderTags();
      };
      item.append(' ', remove);
      return item;
    }),
  );
}

async function setPanel(panel: keyof Prefs, open: boolean, prefs: Prefs): Promise<void> {
  const toggle = $(`${panel}-toggle`);
  toggle.setAttribute('aria-expanded', String(open));
  $(`${panel}-body`).hidden = !open;
  prefs[panel] = open;
  await fetch('/api/preferences', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(prefs) });
}

async function main(): Promise<void> {
  const prefs = (await (await fetch('/api/preferences')).json()) as Prefs;
  for (const panel of ['categories', 'tags'] as const) {
    $(`${panel}-toggle`).setAttribute('aria-expanded', String(prefs[panel]));
    $(`${panel}-body`).hidden = !prefs[panel];
    $(`${panel}-toggle`).addEventListener('click', () => void setPanel(panel, $(`${panel}-toggle`).getAttribute('aria-expanded') !== 'true', prefs));
  }
  const title = $('post-title');
  title.textContent = '\ufeff';
  addBlock();
  const tagInput = $('tag-input') as HTMLInputElement;
  tagInput.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter') return;
    event.preventDefault();
    const tag = tagInput.value.trim();
    if (tag && !tags.includes(tag)) tags.push(tag);
    tagInput.value = '';
    renderTags();
  });
  $('publish-open').addEventListener('click', () => {
    $('prepublish').hidden = false;
  });
  $('publish-confirm').addEventListener('click', async () => {
    const category = ($('category') as HTMLSelectElement).value;
    const categories = category ? [category] : [];
    const post = {
      title: (title.textContent ?? '').replace(/\ufeff/g, '').trim(),
      paragraphs: blocks.map((view) => view.state.doc.textContent).filter((text) => text.trim() !== ''),
      categories,
      tags: [...tags],
    };
    const answer = (await (await fetch('/api/posts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(post) })).json()) as { url: string };
    $('editor').hidden = true;
    $('prepublish').hidden = true;
    const done = $('postpublish');
    done.hidden = false;
    const link = $('post-link') as HTMLAnchorElement;
    link.href = answer.url;
    link.textContent = answer.url;
  });
}

void main();
