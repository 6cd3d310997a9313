#!/usr/bin/env node
import { quietOnBrokenPipe } from '@service/dev-cli';
import { run } from './index.js';

// `service sync --json | head -c 10`: a reader that stops early ends the command quietly.
quietOnBrokenPipe();
process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  inheritStdio: true,
});
