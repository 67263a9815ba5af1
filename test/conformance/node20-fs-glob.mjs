/**
 * Lets the MCP conformance suite's CLI load on Node 20. Its bundle imports
 * `globSync` from `fs` (Node 22 and later), and only uses it to gather
 * result files of a run, which the scenarios this project runs never do.
 * On a Node that has it, nothing is changed; otherwise `fs` as imported by
 * the suite alone resolves to node20-fs-module.mjs, which adds a `globSync`
 * that refuses. Passed to the suite's process as `--import`.
 */
import * as fs from 'node:fs';
import { register } from 'node:module';

if (!('globSync' in fs)) register('./node20-fs-hooks.mjs', import.meta.url);
