/** A host app started as its developer starts it, in its own process, on a free loopback port. */
import { type ChildProcess, spawn } from 'node:child_process';

export interface AppProcess {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

export async function startApp(
  command: string[],
  options: { cwd: string; port: number; ready: RegExp; env?: Record<string, string> },
): Promise<AppProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(options.port), ...options.env };
  // The app's own store (under its folder), never the caller's database or mode.
  for (const name of ['DATABASE_URL', 'NODE_ENV', 'SERVICE_URL', 'SERVICE_MODEL']) delete env[name];
  const child: ChildProcess = spawn(command[0]!, command.slice(1), {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const deadline = Date.now() + 90_000;
  while (!options.ready.test(output)) {
    if (child.exitCode !== null) throw new Error(`the app exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`the app did not get ready:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: `http://127.0.0.1:${options.port}`,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
