// Runs the CLI from source the way bin/execution-worker runs it from dist: an error sets the exit
// code and the process ends once nothing is left open (a leaked connection keeps it alive).
import { main } from '../../src/cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 2;
  },
);
