#!/usr/bin/env node
import { currentFolder, quietOnBrokenPipe } from '@service/dev-cli';
import { run } from './index.js';

// `service sync --json | head -c 10`: a reader that stops early ends the command quietly.
quietOnBrokenPipe();
const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  // Read when a command needs it: `--version` runs in a removed folder, and a command that needs
  // the folder says what is wrong (a `CliError`) instead of dying with a stack trace.
  get cwd() {
    return currentFolder();
  },
  inheritStdio: true,
});
// The host's modules loaded in this process (its tools, its model) may keep it busy (a timer, an
// open connection): the command ends when its own work is done and its output written.
await Promise.all(
  [process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))),
);
process.exit(code);
