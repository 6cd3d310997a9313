import { main } from './admin-cli.js';

/**
 * `pnpm admin` as a process: the command line in, the exit code out (0 done, 1 refused, 2 usage
 * error, 3 the store cannot be opened). The commands themselves are `main` in `admin-cli.ts`.
 *
 * @see docs/operators.md
 */
main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then((code) => {
  process.exitCode = code;
});
