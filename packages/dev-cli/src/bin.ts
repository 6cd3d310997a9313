#!/usr/bin/env node
import { run } from './index.js';
import { nodeIo } from './node-io.js';

process.exitCode = await run(process.argv.slice(2), nodeIo());
