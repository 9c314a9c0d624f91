/**
 * The SDK's toolset classes answer with its wire types; the loop and the recording keep our own
 * (model/types.ts). This is the one place that maps one to the other.
 */
import type { BetaToolResultBlockParam } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { ToolResultBlock, ToolResultContent } from '../model/types.js';

export function fromSdkResult(wire: BetaToolResultBlockParam): ToolResultBlock {
  const content: ToolResultContent[] = [];
  if (typeof wire.content === 'string') content.push({ type: 'text', text: wire.content });
  else {
    for (const block of wire.content ?? []) {
      if (block.type === 'text') content.push({ type: 'text', text: block.text });
      else if (block.type === 'image' && block.source.type === 'base64') {
        content.push({ type: 'image', source: { type: 'base64', media_type: block.source.media_type as 'image/png' | 'image/jpeg', data: block.source.data } });
      } else if (block.type === 'browser_state') {
        content.push({
          type: 'browser_state',
          tabs: block.tabs.map((tab) => ({ tab_id: tab.tab_id, title: tab.title, url: tab.url, ...(tab.active !== undefined ? { active: tab.active } : {}) })),
          ...(block.state_changes ? { state_changes: block.state_changes.map((change) => ({ ...change })) } : {}),
        });
      }
    }
  }
  return {
    type: 'tool_result',
    tool_use_id: wire.tool_use_id,
    content,
    ...(wire.is_error ? { is_error: true } : {}),
    ...(wire.toolset_name ? { toolset_name: wire.toolset_name } : {}),
  };
}
