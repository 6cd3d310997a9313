import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import {
  type Deployer,
  DeployerError,
  type DeploymentSpec,
  type DeploymentState,
  type DeploymentStatus,
  type LogLine,
} from './deployer.js';
import { followLines, LogRing } from './log-ring.js';

export interface LocalDeployerOptions {
  /** How long a new process gets to answer on its port. Default 20 s. */
  readyTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL on stop. Default 5 s. */
  stopGraceMs?: number;
  /** First restart delay after a crash, doubled per consecutive crash up to `maxBackoffMs`. Default 500 ms. */
  backoffMs?: number;
  /** Default 30 s. */
  maxBackoffMs?: number;
  /** Consecutive crashes after which the status reads `crash_loop`. Default 5. */
  crashLoopAfter?: number;
  /** A run this long after answering counts as stable: the crash count starts over. Default 30 s. */
  stableAfterMs?: number;
  /** Log lines kept per deployment. Default 1000. */
  logLines?: number;
  /** V8 old-space cap of each deployment, in MiB (`--max-old-space-size`). Default 512. */
  maxOldSpaceMb?: number;
  /** Open files each deployment may hold (`prlimit --nofile`, when `prlimit` is present). Default 1024. */
  maxOpenFiles?: number;
}

/** The variables of the platform's own environment a deployment inherits; nothing else (no store URL, no keys). */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR'];
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((path) => existsSync(path)) ?? null;

interface Run {
  spec: DeploymentSpec;
  child: ChildProcess | null;
  port: number | null;
  state: DeploymentState;
  since: Date;
  restarts: number;
  /** Crashes since the run was last stable: the backoff exponent. */
  crashes: number;
  lastExit: string | null;
  logs: LogRing;
  stopping: boolean;
  timers: Set<NodeJS.Timeout>;
}

/**
 * Runs each deployment as a supervised child process on this machine: the release's start command
 * in its directory, on a free loopback port (`PORT`), with only the deployment's environment;
 * restarted with capped exponential backoff when it dies; stopped with SIGTERM, then SIGKILL after
 * a grace. Its output is kept in a bounded ring per deployment. Resource limits: the V8 heap cap
 * (`NODE_OPTIONS=--max-old-space-size`), and through `prlimit` when present no core dumps and a
 * cap on open files.
 *
 * Not a sandbox: a deployment runs as the platform's user, with its file system and network.
 * The platform refuses it in production unless explicitly enabled (see docs/scaling.md).
 */
export class LocalDeployer implements Deployer {
  readonly #runs = new Map<string, Run>();
  /** The last deploy or stop of each app: the next waits for it, so two never interleave. */
  readonly #pending = new Map<string, Promise<unknown>>();
  readonly #options: Required<LocalDeployerOptions>;
  /** When each app's last run was stopped: its status's `since` once the run is gone (until the app is deleted). */
  readonly #stoppedAt = new Map<string, Date>();

  constructor(options: LocalDeployerOptions = {}) {
    this.#options = {
      readyTimeoutMs: 20_000,
      stopGraceMs: 5000,
      backoffMs: 500,
      maxBackoffMs: 30_000,
      crashLoopAfter: 5,
      stableAfterMs: 30_000,
      logLines: 1000,
      maxOldSpaceMb: 512,
      maxOpenFiles: 1024,
      ...options,
    };
  }

  deploy(spec: DeploymentSpec, { signal }: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#inTurn(spec.appId, () => {
      // Checked in its turn, not when called: a delete's stop queued before it has run by now.
      if (signal?.aborted) throw new DeployerError('The deployment was called off before it started');
      return this.#deploy(spec);
    });
  }

  stop(appId: string): Promise<void> {
    return this.#inTurn(appId, () => this.#stop(appId));
  }

  remove(appId: string): Promise<void> {
    return this.#inTurn(appId, async () => {
      await this.#stop(appId);
      // Else every app deleted since boot would stay in the map.
      this.#stoppedAt.delete(appId);
    });
  }

  async #deploy(spec: DeploymentSpec): Promise<void> {
    await this.#stop(spec.appId);
    if (!existsSync(spec.artifact.path)) {
      throw new DeployerError(`The release's directory does not exist on this machine`);
    }
    const run: Run = {
      spec,
      child: null,
      port: null,
      state: 'starting',
      since: new Date(),
      restarts: 0,
      crashes: 0,
      lastExit: null,
      logs: new LogRing(this.#options.logLines),
      stopping: false,
      timers: new Set(),
    };
    this.#runs.set(spec.appId, run);
    try {
      await this.#start(run);
    } catch (error) {
      const lastLines = run.logs
        .tail(5)
        .map((entry) => entry.line)
        .join('\n');
      await this.#stop(spec.appId);
      const reason = error instanceof Error ? error.message : String(error);
      throw new DeployerError(lastLines ? `${reason}. Last output:\n${lastLines}` : reason);
    }
  }

  async #stop(appId: string): Promise<void> {
    const run = this.#runs.get(appId);
    if (!run) return;
    this.#runs.delete(appId);
    run.stopping = true;
    for (const timer of run.timers) clearTimeout(timer);
    await this.#terminate(run);
    this.#setState(run, 'stopped');
    this.#stoppedAt.set(appId, run.since);
  }

  status(appId: string): DeploymentStatus {
    const run = this.#runs.get(appId);
    if (!run) {
      const stopped = this.#stoppedAt.get(appId);
      return { state: 'stopped', restarts: 0, lastExit: null, since: stopped?.toISOString() ?? null };
    }
    return {
      state: run.state,
      restarts: run.restarts,
      lastExit: run.lastExit,
      since: run.since.toISOString(),
    };
  }

  endpoint(appId: string): string | null {
    const run = this.#runs.get(appId);
    return run?.state === 'running' && run.port ? `http://127.0.0.1:${run.port}` : null;
  }

  logs(appId: string, tail: number): LogLine[] {
    return this.#runs.get(appId)?.logs.tail(tail) ?? [];
  }

  async close(): Promise<void> {
    await Promise.all([...this.#runs.keys()].map((appId) => this.stop(appId)));
  }

  /** Launches the process and resolves once it answers on its port; rejects when it exits or times out first. */
  async #start(run: Run): Promise<void> {
    const port = await freePort();
    const { artifact, env } = run.spec;
    const [command, ...args] = artifact.start;
    if (!command) throw new DeployerError('The release has no start command');
    const executable = command === 'node' ? process.execPath : command;
    const argv = PRLIMIT
      ? [PRLIMIT, `--nofile=${this.#options.maxOpenFiles}`, '--core=0', '--', executable, ...args]
      : [executable, ...args];
    const inherited = Object.fromEntries(
      INHERITED_ENV.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
    );
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: artifact.path,
      env: {
        ...inherited,
        ...env,
        PORT: String(port),
        NODE_OPTIONS: `--max-old-space-size=${this.#options.maxOldSpaceMb}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a stop reaches whatever it started too.
      detached: true,
    });
    run.child = child;
    run.port = port;
    for (const [stream, source] of [
      ['stdout', child.stdout],
      ['stderr', child.stderr],
    ] as const) {
      followLines(source, (line) => run.logs.push(stream, line));
    }
    const exited = new Promise<string>((resolve) => {
      child.once('error', (error) => resolve(`could not start: ${error.message}`));
      child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `exit ${code}`));
    });
    void exited.then((how) => this.#exited(run, child, how));

    const deadline = Date.now() + this.#options.readyTimeoutMs;
    let gone: string | null = null;
    void exited.then((how) => {
      gone = how;
    });
    while (!(await answers(port))) {
      if (gone !== null) throw new DeployerError(`The deployment ended before it answered (${gone})`);
      if (run.stopping) return;
      if (Date.now() > deadline) {
        throw new DeployerError(
          `The deployment did not answer on its port within ${this.#options.readyTimeoutMs} ms`,
        );
      }
      await delay(100);
    }
    if (run.child !== child || run.stopping) return;
    this.#setState(run, 'running');
    this.#later(run, this.#options.stableAfterMs, () => {
      if (run.child === child) run.crashes = 0;
    });
  }

  /** A process ended: unless it was stopped, start it again after the backoff. */
  #exited(run: Run, child: ChildProcess, how: string): void {
    if (run.child !== child) return;
    run.child = null;
    run.lastExit = how;
    run.logs.push('deployer', `process ended (${how})`);
    if (run.stopping) return;
    // Died before it ever answered on first deploy: `deploy` reports it; nothing to restart.
    if (run.state === 'starting' && run.restarts === 0 && run.crashes === 0) return;
    run.crashes += 1;
    run.restarts += 1;
    this.#setState(run, run.crashes >= this.#options.crashLoopAfter ? 'crash_loop' : 'starting');
    const wait = Math.min(this.#options.backoffMs * 2 ** (run.crashes - 1), this.#options.maxBackoffMs);
    run.logs.push('deployer', `restarting in ${wait} ms`);
    this.#later(run, wait, () => {
      if (run.stopping) return;
      this.#start(run).catch((error: unknown) => {
        run.logs.push('deployer', error instanceof Error ? error.message : String(error));
        // A start that fails counts as a crash too: the exit handler schedules the next one,
        // or, when the process still runs but never answered, it is ended so that it does.
        if (run.child) void this.#terminate(run);
      });
    });
  }

  /** Runs `action` after the app's previous deploy or stop has settled. */
  #inTurn<T>(appId: string, action: () => Promise<T>): Promise<T> {
    const previous = this.#pending.get(appId) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(action);
    this.#pending.set(appId, next);
    const forget = () => {
      if (this.#pending.get(appId) === next) this.#pending.delete(appId);
    };
    next.then(forget, forget);
    return next;
  }

  #later(run: Run, ms: number, action: () => void): void {
    const timer = setTimeout(() => {
      run.timers.delete(timer);
      action();
    }, ms);
    timer.unref();
    run.timers.add(timer);
  }

  #setState(run: Run, state: DeploymentState): void {
    if (run.state === state) return;
    run.state = state;
    run.since = new Date();
  }

  /** SIGTERM to the process group, SIGKILL after the grace; resolves when the process is gone. */
  async #terminate(run: Run): Promise<void> {
    const child = run.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    signalGroup(child, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), this.#options.stopGraceMs);
    await gone;
    clearTimeout(timer);
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on the loopback port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
