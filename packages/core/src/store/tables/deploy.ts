/** Tables of deployments: each deployed app's run state, and the secrets set on an app. */
import type { CreatedAt, Defaulted, DefaultedJson, Touched } from './columns.js';

/**
 * What a release runs: a local directory and the command started in it (the local deployer spawns
 * it there). A container scheduler would take an image instead.
 */
export interface ReleaseArtifact {
  type: 'directory';
  path: string;
  start: string[];
}

export type DesiredState = 'running' | 'stopped';

/** One deployed app: which release it runs and whether it should be running. */
export interface DeploymentsTable {
  app_id: string;
  tenant_id: string;
  release_id: string | null;
  desired_state: Defaulted<DesiredState>;
  /** The deployment's App Key: its id, and the key sealed (associated data: the app) for restarts. */
  app_key_id: string;
  app_key_sealed: string;
  /** The wizard inputs as given, by key (secret-typed inputs live in `app_secrets`). */
  inputs: DefaultedJson<Record<string, string>>;
  deployed_by: string | null;
  created_at: CreatedAt;
  updated_at: Touched;
}

/** A secret set on an app, sealed (associated data: app and name); reaches it as an environment variable. */
export interface AppSecretsTable {
  app_id: string;
  tenant_id: string;
  name: string;
  value_sealed: string;
  updated_at: Touched;
}

export interface DeployTables {
  deployments: DeploymentsTable;
  app_secrets: AppSecretsTable;
}
