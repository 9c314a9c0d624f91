/**
 * `npm run bench`: every benchmark in one run, figures printed (never asserted). Pick some
 * with `npm run bench -- tokens steps` (names: tokens, steps, latency, video, confinement, live, toolset, cache,
 * throughput, phases, widgets, encoder, screenshot, secrets, hostile). The scenarios that talk to the scripted model
 * server add what they cost, and a last section sums it by model (bench/cost.ts).
 */
import { benchCache } from './cache.js';
import { benchConfinement } from './confinement.js';
import { anyCost, costFigures } from './cost.js';
import { benchEncoderFloor } from './encoder-floor.js';
import { benchHostile } from './hostile.js';
import { benchLive } from './live-view.js';
import { benchPhases } from './phases.js';
import { benchScreenshot } from './screenshot.js';
import { benchSecrets } from './secrets.js';
import { benchLatencies, benchSteps } from './step-overhead.js';
import { benchThroughput } from './throughput.js';
import { benchTokens } from './tokens.js';
import { benchToolset } from './toolset.js';
import { benchVideo } from './video.js';
import { benchWidgets } from './widgets.js';

const BENCHES: Record<string, () => Promise<Record<string, number | string>> | Record<string, number | string>> = {
  tokens: benchTokens,
  steps: benchSteps,
  latency: benchLatencies,
  video: benchVideo,
  confinement: benchConfinement,
  toolset: benchToolset,
  cache: benchCache,
  live: benchLive,
  throughput: benchThroughput,
  phases: benchPhases,
  widgets: benchWidgets,
  encoder: benchEncoderFloor,
  screenshot: benchScreenshot,
  secrets: benchSecrets,
  hostile: benchHostile,
};

const wanted = process.argv.slice(2).filter((a) => a !== '--');
const names = wanted.length > 0 ? wanted : Object.keys(BENCHES);
let failed = false;
for (const name of names) {
  const bench = BENCHES[name];
  if (!bench) {
    process.stderr.write(`unknown bench "${name}" (have: ${Object.keys(BENCHES).join(', ')})\n`);
    process.exitCode = 2;
    continue;
  }
  const started = Date.now();
  try {
    const figures = await bench();
    process.stdout.write(`\n## ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    for (const [key, value] of Object.entries(figures)) process.stdout.write(`${key.padEnd(44)} ${value}\n`);
  } catch (error) {
    failed = true;
    process.stderr.write(`bench ${name} failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  }
}
// What the scenarios that talked to the model cost, by model (bench/cost.ts).
if (anyCost()) {
  process.stdout.write('\n## cost by model (estimated, each model at its own prices)\n');
  for (const [key, value] of Object.entries(costFigures())) process.stdout.write(`${key.padEnd(44)} ${value}\n`);
}
if (failed) process.exitCode = 1;
