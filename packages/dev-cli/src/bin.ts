#!/usr/bin/env node
import { run } from './index.js';
import { nodeIo, quietOnBrokenPipe } from './node-io.js';

quietOnBrokenPipe();
process.exitCode = await run(process.argv.slice(2), nodeIo());
