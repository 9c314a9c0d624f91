/**
 * Where the Messages API takes a forced tool choice (`tool_choice: {type: "tool"}` or `"any"`),
 * docs/run-cache.md#the-final-check: never with thinking on (every model answers 400), and never
 * on Sonnet 5.5, which answers it with a 400 whatever the thinking. A request that may not force
 * its tool is sent without `tool_choice` (the API's `auto`), and its answer is read for the call.
 */

/** Models that refuse a forced tool choice outright (a dated id or `-latest` alias of each too). */
const REFUSES_FORCED_TOOL_CHOICE = /^claude-sonnet-5-5(-|$)/;

/** Whether a request to `model` may force its tool choice, given whether it thinks. */
export function mayForceToolChoice(model: string, thinking: boolean): boolean {
  return !thinking && !REFUSES_FORCED_TOOL_CHOICE.test(model.trim().toLowerCase());
}
