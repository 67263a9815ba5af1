#!/usr/bin/env node
/**
 * `mailcairn`: the operator client of the administrative endpoint
 * (docs/cli.md). A thin entry: the program is
 * cli/main.ts.
 */
import { main } from '../cli/main.ts';

// No top-level await: the same entry is bundled as CommonJS (packaging/client-bundle.ts).
main({
  argv: process.argv,
  env: process.env,
  // Opening standard input costs milliseconds every command would pay; only a command reading it opens it.
  get stdin() {
    return process.stdin;
  },
  stdout: process.stdout,
  stderr: process.stderr,
}).then((code) => {
  process.exitCode = code;
});
