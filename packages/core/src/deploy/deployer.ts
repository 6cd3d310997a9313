import type { ReleaseArtifact } from '../store/database.js';

/** What to run for one deployment. */
export interface DeploymentSpec {
  appId: string;
  tenantId: string;
  artifact: ReleaseArtifact;
  /**
   * The environment the deployment gets: its App Key (`SERVICE_API_KEY`), `SERVICE_BASE_URL`, its
   * wizard inputs and secrets. `PORT` is the deployer's to choose.
   */
  env: Record<string, string>;
}

/**
 * `starting`: launched, not yet answering; `running`: answering on its endpoint; `crash_loop`: it
 * keeps dying and is restarted at the longest backoff; `stopped`: not running (never started,
 * undeployed, or the platform stopped).
 */
export type DeploymentState = 'starting' | 'running' | 'crash_loop' | 'stopped';

export interface DeploymentStatus {
  state: DeploymentState;
  /** Restarts after the deployment died, since it was last deployed. */
  restarts: number;
  /** How the last run ended (`exit 1`, `signal SIGKILL`), null while none has. */
  lastExit: string | null;
  /**
   * When the state last changed (for `stopped`, when it was stopped), ISO 8601; null when this
   * deployer has not run the deployment since it started itself.
   */
  since: string | null;
}

export interface LogLine {
  /** ISO 8601 */
  at: string;
  stream: 'stdout' | 'stderr' | 'deployer';
  line: string;
}

/**
 * Runs deployments somewhere and says where their traffic goes. The platform keeps what should
 * run (the `deployments` table) and calls this to make it so; an implementation keeps only what
 * it runs. The local one supervises child processes on this machine; a cluster scheduler
 * (Kubernetes, Fly, ECS) implements the same calls (see docs/scaling.md).
 */
export interface Deployer {
  /**
   * Starts the deployment, replacing one running under the same app id, and resolves once it
   * answers on its endpoint; rejects with a `DeployerError` (nothing is left running) when it
   * cannot be started. A `signal` aborted by the time the start's turn comes (after the app's
   * earlier deploys and stops) calls it off: nothing is replaced or started, and it rejects. The
   * platform aborts it when the app is deleted, so a restart queued behind the delete's stop does
   * not bring the deployment back.
   */
  deploy(spec: DeploymentSpec, options?: { signal?: AbortSignal }): Promise<void>;
  /** Stops the deployment (gracefully, then forcibly); resolves when it is gone. Unknown ids are a no-op. */
  stop(appId: string): Promise<void>;
  /**
   * Stops the deployment as `stop` does and forgets it (its app is deleted): nothing of it is kept,
   * its status reads as never run. Optional: without it the platform calls `stop`, enough for a
   * deployer that remembers nothing of what it stopped.
   */
  remove?(appId: string): Promise<void>;
  status(appId: string): DeploymentStatus;
  /** Where the app proxy sends the deployment's traffic (`http://host:port`), null while it is not running. */
  endpoint(appId: string): string | null;
  /** The last `tail` lines the deployment wrote, oldest first. */
  logs(appId: string, tail: number): LogLine[];
  /** Stops every deployment this deployer runs. */
  close(): Promise<void>;
}

/** A deployment could not be started; its message is safe to show to the tenant. */
export class DeployerError extends Error {
  override name = 'DeployerError';
}
