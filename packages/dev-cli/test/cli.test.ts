/**
 * The CLI's wiring: help (inline snapshots), version, unknown commands and options, NO_COLOR.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMMAND_HELP } from '../src/help.js';
import { run } from '../src/index.js';
import { styles } from '../src/io.js';
import { nodeIo } from '../src/node-io.js';
import { VERSION } from '../src/version.js';
import { createTestIo, type TestIo } from './support/io.js';

let io: TestIo;
afterEach(async () => io?.dispose());

describe('service --help', () => {
  it('prints the commands and options, for --help, -h and help', async () => {
    io = await createTestIo();
    expect(await run(['--help'], io)).toBe(0);
    expect(io.out()).toMatchInlineSnapshot(`
      "service: the developer CLI of the service platform

      Usage: service <command> [options]

      Commands:
        login             Log in through the browser and store a CLI key
        logout            Revoke the stored key and remove it
        whoami            Show the account, tenant and credit balance
        validate [file]   Check service.yaml against the deploy manifest schema
        dev               Write .env.service-dev for local development
        ssh <deployment>  Open a shell in a deployment

      Options (anywhere on the line):
        --json            Print one JSON object on stdout, errors included ({ "error": { ... } })
        -h, --help        Show help; service <command> --help (or service help <command>) for one
        -v, --version     Show the version

      Examples:
        service login --api-base https://platform.example.com
        service whoami --json
        service validate deploy/service.yaml
        service dev --app-key service_sk_…

      The key lives in ~/.service/config.json (mode 0600), written by service login.
      "
    `);
    const full = io.out();
    for (const flag of ['-h', 'help']) {
      const other = await createTestIo();
      expect(await run([flag], other)).toBe(0);
      expect(other.out()).toBe(full);
      await other.dispose();
    }
  });

  it('gives every command one Example(s) section, after its options', () => {
    for (const [command, help] of Object.entries(COMMAND_HELP)) {
      expect(help.split(/Examples?:/).length - 1, command).toBe(1);
      if (help.includes('Options:'))
        expect(help.indexOf('Options:'), command).toBeLessThan(help.search(/Examples?:/));
    }
  });

  it('prints the help and exits 2 when no command is given', async () => {
    io = await createTestIo();
    expect(await run([], io)).toBe(2);
    expect(io.out()).toContain('Usage: service <command> [options]');
  });

  it('prints the help of one command', async () => {
    io = await createTestIo();
    expect(await run(['login', '--help'], io)).toBe(0);
    expect(io.out()).toMatchInlineSnapshot(`
      "Usage: service login [--api-base <url>] [--no-browser]

      Opens the platform in your browser; after you sign in and click "Issue CLI key", a fresh key is
      sent to this terminal and stored in ~/.service/config.json. Your previous CLI key is revoked.
      Waits at most 5 minutes. When the browser cannot reach this terminal (SSH, containers), paste
      the login code the page shows. Or paste a CLI key made on the dashboard's Keys page: the platform
      is asked whose it is, and it is stored as the CLI's key.

      Checks first that the platform answers, so a wrong URL fails at once. What you paste is not
      echoed.

      Options:
        --api-base <url>  Platform URL (default: the stored login's, else http://localhost:8787);
                          remembered until logout
        --no-browser      Only print the URL to open
        --json            Print { email, tenantId, apiBase, key, configPath } once logged in

      Examples:
        service login
        service login --api-base https://platform.example.com --no-browser
      "
    `);
    for (const command of ['logout', 'whoami', 'validate', 'dev', 'ssh']) {
      const other = await createTestIo();
      expect(await run([command, '-h'], other)).toBe(0);
      expect(other.out()).toMatch(new RegExp(`^Usage: service ${command}`));
      await other.dispose();
    }
  });

  it('prints the help of one command for service help <command>, and refuses an unknown one', async () => {
    io = await createTestIo();
    expect(await run(['help', 'ssh'], io)).toBe(0);
    expect(io.out()).toMatch(/^Usage: service ssh <deployment>\n/);
    const other = await createTestIo();
    expect(await run(['help', 'deploy'], other)).toBe(2);
    expect(other.err()).toMatch(/^Unknown command: deploy\n\nservice: the developer CLI/);
    await other.dispose();
  });

  it('refuses a word after service help <command> as a usage error (exit 2)', async () => {
    io = await createTestIo();
    expect(await run(['help', 'ssh', 'extra'], io)).toBe(2);
    expect(io.out()).toBe('');
    expect(io.err()).toMatch(
      /^Unexpected argument: extra \(service help takes one command\)\n\nservice: the developer CLI/,
    );
  });
});

describe('service --version', () => {
  it('prints the version of package.json, for --version and -v', async () => {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    expect(VERSION).toBe(pkg.version);
    for (const flag of ['--version', '-v']) {
      io = await createTestIo();
      expect(await run([flag], io)).toBe(0);
      expect(io.out()).toBe(`${pkg.version}\n`);
      await io.dispose();
    }
  });
});

describe('mistakes', () => {
  it('says an empty command is empty (exit 2), rather than naming no command as unknown', async () => {
    io = await createTestIo();
    expect(await run([''], io)).toBe(2);
    expect(io.err()).toMatch(
      /^The command is empty: name one \(service --help lists them\)\n\nservice: the developer CLI/,
    );
  });

  it('prints "Unknown command: <name>", then the help, and exits 2', async () => {
    io = await createTestIo();
    expect(await run(['deploy', '--force'], io)).toBe(2);
    expect(io.err()).toMatch(/^Unknown command: deploy\n\nservice: the developer CLI/);
    expect(io.err()).toContain('ssh <deployment>');
    expect(io.out()).toBe('');
  });

  it('calls an unknown first word that looks like an option an option, and reads past a leading --', async () => {
    io = await createTestIo();
    expect(await run(['--bogus'], io)).toBe(2);
    expect(io.err()).toMatch(/^Unknown option: --bogus\n/);
    const ended = await createTestIo();
    expect(await run(['--', 'validate', 'none.yaml'], ended)).toBe(1);
    expect(ended.err()).not.toContain('Unknown command');
    await ended.dispose();
  });

  it('does not mistake object properties for commands', async () => {
    io = await createTestIo();
    expect(await run(['constructor'], io)).toBe(2);
    expect(io.err()).toMatch(/^Unknown command: constructor/);
  });

  it("refuses an unknown option or a stray argument with exit 2 and the command's usage", async () => {
    io = await createTestIo();
    expect(await run(['whoami', '--jsonn'], io)).toBe(2);
    expect(io.err()).toMatch(/^Unknown option: --jsonn\n\nUsage: service whoami/);
    const other = await createTestIo();
    expect(await run(['logout', 'now'], other)).toBe(2);
    expect(other.err()).toMatch(/^Unexpected argument: now/);
    await other.dispose();
    // A global flag given a value is named as such, not as an unknown option.
    const valued = await createTestIo();
    expect(await run(['validate', '--json=false'], valued)).toBe(2);
    expect(valued.err()).toMatch(
      /^--json takes no value: write --json alone, or leave it out\n\nUsage: service validate/,
    );
    await valued.dispose();
    // The same before the command.
    const first = await createTestIo();
    expect(await run(['--json=false', 'whoami'], first)).toBe(2);
    expect(first.err()).toMatch(/^--json takes no value: write --json alone, or leave it out\n/);
    await first.dispose();
  });

  it('reads global flags anywhere and answers errors as JSON with --json', async () => {
    io = await createTestIo();
    expect(await run(['--json'], io)).toBe(2);
    expect(JSON.parse(io.out())).toEqual({
      error: { message: 'No command given. Run service --help to see them.', exitCode: 2 },
    });
    const unknown = await createTestIo();
    expect(await run(['deploy', '--json'], unknown)).toBe(2);
    expect(JSON.parse(unknown.out())).toEqual({ error: { message: 'Unknown command: deploy', exitCode: 2 } });
    expect(unknown.err()).toBe('');
    const notLoggedIn = await createTestIo();
    expect(await run(['--json', 'whoami'], notLoggedIn)).toBe(1);
    expect(JSON.parse(notLoggedIn.out())).toEqual({
      error: { message: 'Not logged in. Run service login first.', exitCode: 1 },
    });
    const help = await createTestIo();
    expect(await run(['--help', 'dev'], help)).toBe(0);
    expect(help.out()).toMatch(/^Usage: service dev \[--app-key <key>\]/);
    const version = await createTestIo();
    expect(await run(['--json', '--version'], version)).toBe(0);
    expect(JSON.parse(version.out())).toEqual({ version: VERSION });
    const ssh = await createTestIo();
    expect(await run(['ssh', 'my-tool', '--json'], ssh)).toBe(2);
    expect(JSON.parse(ssh.out()).error.message).toBe('service ssh is interactive: --json does not apply');
    for (const other of [unknown, notLoggedIn, help, version, ssh]) await other.dispose();
  });

  it('runs as a real process: exit codes and streams of the bin', async () => {
    const bin = new URL('../src/bin.ts', import.meta.url).pathname;
    const node = (args: string[]) =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', bin, ...args], {
        env: { ...process.env, NO_COLOR: '1' },
      });
    expect((await node(['--version'])).stdout).toBe(`${VERSION}\n`);
    const failed = await node(['nope']).catch((error) => error);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/^Unknown command: nope/);
  });

  it('says so when the current folder was removed, instead of a stack trace', async () => {
    io = await createTestIo();
    // What process.cwd() throws in a shell still standing in a folder removed under it.
    const gone = Object.assign(new Error('ENOENT: no such file or directory, uv_cwd'), { code: 'ENOENT' });
    const cwd = vi.spyOn(process, 'cwd').mockImplementation(() => {
      throw gone;
    });
    try {
      const real = Object.assign(nodeIo(), { stdout: io.stdout, stderr: io.stderr, env: io.env });
      expect(await run(['--version'], real)).toBe(0);
      expect(await run(['validate'], real)).toBe(1);
      expect(await run(['--json', 'dev'], real)).toBe(1);
    } finally {
      cwd.mockRestore();
    }
    const message =
      'The current folder no longer exists (removed or moved away): cd to a folder and run the command again.';
    expect(io.err()).toBe(`${message}\n`);
    expect(io.out()).toBe(`${VERSION}\n${JSON.stringify({ error: { message, exitCode: 1 } })}\n`);
  });

  it('stops quietly when the reader of its output has gone (| head -1, | true)', async () => {
    io = await createTestIo();
    const bad = join(io.cwd, 'bad.yaml');
    await writeFile(bad, 'name: 1\nversion: x\nruntime: cobol\n');
    const bin = new URL('../src/bin.ts', import.meta.url).pathname;
    // `true` exits before the CLI has started: every write meets a closed pipe (EPIPE).
    const result = await promisify(execFile)(
      '/bin/sh',
      ['-c', `"${process.execPath}" --import tsx "${bin}" validate "${bad}" | true`],
      { env: { ...process.env, NO_COLOR: '1' }, cwd: new URL('..', import.meta.url).pathname },
    );
    expect(result.stderr).toBe('');
  });

  it("still exits with the command's own code when the reader goes before the outcome is known", async () => {
    // A command that prints as it goes (an ssh shell's output, a doctor's checks) and fails later:
    // the reader stopping early must not turn its failure into success.
    const handler = new URL('../src/node-io.ts', import.meta.url).pathname;
    const script = `
      const { quietOnBrokenPipe } = await import(${JSON.stringify(handler)});
      quietOnBrokenPipe();
      for (let i = 0; i < 50; i++) {
        process.stdout.write('line ' + i + '\\n');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      process.exitCode = 3;
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('..', import.meta.url).pathname,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    // `| head -1`: the reader takes the first line and closes its end of the pipe.
    child.stdout.once('data', () => child.stdout.destroy());
    const [code] = await once(child, 'exit');
    expect(stderr).toBe('');
    expect(code).toBe(3);
  });
});

describe('color', () => {
  it('styles only on a terminal without NO_COLOR or TERM=dumb', async () => {
    io = await createTestIo();
    const tty = { write: () => true, isTTY: true };
    expect(styles({ ...io, env: {} }, tty).green('ok')).toBe('\u001b[32mok\u001b[39m');
    expect(styles({ ...io, env: { NO_COLOR: '1' } }, tty).green('ok')).toBe('ok');
    expect(styles({ ...io, env: { TERM: 'dumb' } }, tty).green('ok')).toBe('ok');
    expect(styles({ ...io, env: {} }, { write: () => true }).green('ok')).toBe('ok');
  });
});
