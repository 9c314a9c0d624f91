// Runs the CLI from source (tests spawn it with `node --import tsx`), as bin/ runs it from dist.
import { main } from '../../src/cli.js';

process.exitCode = await main(process.argv.slice(2));
