#!/usr/bin/env node
/**
 * `mailcairn`: the operator client of the administrative endpoint
 * (docs/cli.md). A thin entry: the program is
 * cli/main.ts.
 */
import { main } from '../cli/main.ts';

process.exitCode = await main({ argv: process.argv, env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
