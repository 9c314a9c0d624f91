#!/usr/bin/env node
// The CLI runs the compiled code; `npm ci` builds it through the `prepare` script.
import { main } from '../dist/cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 2;
  },
);
