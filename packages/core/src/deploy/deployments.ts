import type { Kysely, Transaction } from 'kysely';
import type { BalanceReader } from '../billing/balances.js';
import type { TenantConnections } from '../connections/tenant-connections.js';
import { EVENTS_CHANNEL, type EventNotice } from '../events/log.js';
import type { Logger } from '../http/logger.js';
import { type KeyStore, liveKeyAt } from '../identity/key-store.js';
import type { KeyHandOver } from '../identity/tenant-keys.js';
import type { Database, DesiredState, ReleaseArtifact, WizardInputRow } from '../store/database.js';
import type { NotificationHandler } from '../store/listener.js';
import type { Sealer } from '../store/sealing.js';
import { type AppView, appRows, appView } from './app-views.js';
import { billingGate, bindingsFor, findRelease, findTool } from './deploy-checks.js';
import type { Deployer, DeploymentSpec, DeploymentStatus, LogLine } from './deployer.js';
import { DeployerError } from './deployer.js';
import { checkInputs, isReservedName, SECRET_NAME } from './environment.js';
import { DeployError } from './errors.js';

export interface DeploymentsDeps {
  db: Kysely<Database>;
  /** Null without an encryption key: deployments are refused (their App Key and secrets are sealed). */
  sealer: Sealer | null;
  keys: KeyStore;
  connections: TenantConnections;
  balances: BalanceReader;
  /** Null when no deployer is configured: deploys are refused (503). */
  deployer: Deployer | null;
  baseUrl: string;
  logger: Logger;
}

export interface DeployInput {
  tenantId: string;
  userId: string;
  toolSlug: string;
  version?: string;
  slug: string;
  name?: string;
  inputs: Record<string, unknown>;
  /** Connection id by provider; a required provider left out binds the tenant's newest connected one. */
  connections: Record<string, string>;
}

export interface DeployResult {
  app: AppView;
  /** Shown once: stored only as its hash, and sealed for the deployment's restarts. */
  appKey: { id: string; key: string; prefix: string };
}

/** The deployment a rotated App Key was handed to, and how it runs after its restart. */
export interface KeyHolder {
  appId: string;
  slug: string;
  state: DeploymentStatus['state'];
}

export interface BoundConnection {
  id: string;
  provider: string;
  status: string;
  displayName: string | null;
}

/**
 * Deployments of catalog tools: what runs (the `deployments` table, the source of truth) and
 * making it so through the `Deployer`. A deploy either completes (app, bindings, App Key,
 * running deployment) or leaves nothing behind.
 *
 * @see docs/api/deploy.md
 */
export class Deployments {
  /**
   * The `restart_on` kinds of each deployment this instance started whose manifest lists any, as
   * of the release it started: the event follower parses a notice only when it may name one.
   */
  readonly #restartOn = new Map<string, ReadonlySet<string>>();
  /**
   * Per app, the starts under way here (deploys, redeploys, restarts, resumes) and the deletes: a
   * delete aborts the app's starts, and a start begun while one runs is aborted from the outset, so
   * no start racing a delete leaves a process running for an app that is gone. Kept only while
   * either is under way.
   */
  readonly #inFlight = new Map<string, { deletes: number; starts: Set<AbortController> }>();

  constructor(private readonly deps: DeploymentsDeps) {}

  /** Whether deploys can run here at all. */
  get enabled(): boolean {
    return this.deps.deployer !== null;
  }

  async deploy(input: DeployInput): Promise<DeployResult> {
    const { db, keys, connections } = this.deps;
    // Refused (503) before anything is checked when no deployer runs here.
    this.#deployer();
    const sealer = this.#sealer();
    await billingGate(this.deps.db, this.deps.balances, input.tenantId);
    const tool = await findTool(this.deps.db, input.tenantId, input.toolSlug);
    const release = await findRelease(this.deps.db, tool.id, input.version);
    const checked = checkInputs(release.wizard_inputs as WizardInputRow[], input.inputs);
    const bindings = await bindingsFor(this.deps.connections, input.tenantId, release, input.connections);
    const taken = await db
      .selectFrom('apps')
      .select('id')
      .where('tenant_id', '=', input.tenantId)
      .where('slug', '=', input.slug)
      .executeTakeFirst();
    if (taken) throw slugTaken(input.slug);

    let appId: string;
    try {
      const app = await db
        .insertInto('apps')
        .values({
          tenant_id: input.tenantId,
          slug: input.slug,
          name: input.name ?? tool.name,
          tool_id: tool.id,
          release_id: release.id,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      appId = app.id;
    } catch (error) {
      // Two deploys of one slug raced past the check above.
      if ((error as { code?: string }).code === '23505') throw slugTaken(input.slug);
      throw error;
    }
    let keyId: string | null = null;
    try {
      for (const connectionId of bindings) await connections.bind(input.tenantId, appId, connectionId);
      const appKey = await keys.issue({
        tenantId: input.tenantId,
        kind: 'app',
        appId,
        userId: input.userId,
        name: `Deployment ${input.slug}`,
      });
      keyId = appKey.id;
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('deployments')
          .values({
            app_id: appId,
            tenant_id: input.tenantId,
            release_id: release.id,
            app_key_id: appKey.id,
            app_key_sealed: sealer.seal(appKey.key, keyAad(appId)),
            inputs: JSON.stringify(checked.plain),
            deployed_by: input.userId,
          })
          .execute();
        for (const [name, value] of Object.entries(checked.secret)) {
          await trx
            .insertInto('app_secrets')
            .values({
              app_id: appId,
              tenant_id: input.tenantId,
              name,
              value_sealed: sealer.seal(value, secretAad(appId, name)),
            })
            .execute();
        }
      });
      await this.#starting(appId, async (signal) => {
        const runs = await this.#run(
          {
            appId,
            tenantId: input.tenantId,
            artifact: release.artifact as ReleaseArtifact,
            env: await this.#environment(appId),
          },
          release.manifest,
          signal,
        );
        // Deleted while it started (its id is listed as soon as it is made).
        if (!runs) throw appNotFound();
      });
      return { app: await this.get(input.tenantId, appId), appKey };
    } catch (error) {
      // Nothing half-made stays: the key stops working everywhere, the app (its bindings,
      // deployment row and secrets with it) goes.
      await this.#deleting(appId, async () => {
        await this.#halt(appId, { deleted: true }).catch(() => {});
        if (keyId) await keys.revoke(keyId, input.tenantId).catch(() => {});
        await db.deleteFrom('apps').where('id', '=', appId).execute();
      });
      throw failedDeploy(error);
    }
  }

  /** Runs the app again: on `version`, else on its tool's active release (the newest). */
  async redeploy(tenantId: string, appId: string, version?: string): Promise<AppView> {
    // Refused (503) before anything is checked when no deployer runs here.
    this.#deployer();
    return this.#starting(appId, (signal) => this.#redeploy(tenantId, appId, version, signal));
  }

  async #redeploy(tenantId: string, appId: string, version: string | undefined, signal: AbortSignal) {
    const row = await this.#deployment(tenantId, appId);
    await billingGate(this.deps.db, this.deps.balances, tenantId);
    const app = await this.#app(tenantId, appId);
    if (!app.tool_id) throw new DeployError(409, 'The app no longer has a tool to deploy', 'TOOL_NOT_FOUND');
    const release = await findRelease(this.deps.db, app.tool_id, version);
    // Being deleted: no new App Key for an app whose keys the delete revokes.
    if (signal.aborted) throw appNotFound();
    await this.#keepKeyLive(tenantId, appId);
    let runs: boolean;
    try {
      runs = await this.#run(
        {
          appId,
          tenantId,
          artifact: release.artifact as ReleaseArtifact,
          env: await this.#environment(appId),
        },
        release.manifest,
        signal,
      );
    } catch (error) {
      await this.#setDesired(row.app_id, 'stopped');
      throw failedDeploy(error);
    }
    // Deleted meanwhile: nothing runs, and there is nothing left to point at the release.
    if (!runs) throw appNotFound();
    await this.deps.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('deployments')
        .set({ release_id: release.id, desired_state: 'running', updated_at: new Date() })
        .where('app_id', '=', appId)
        .execute();
      await trx.updateTable('apps').set({ release_id: release.id }).where('id', '=', appId).execute();
    });
    return this.get(tenantId, appId);
  }

  /**
   * Seals a rotated App Key's replacement into the deployment that held the old key (a `KeyHandOver`
   * for `TenantKeys.rotate`): the deployment cannot be handed a key any other way.
   */
  readonly handOverKey: KeyHandOver = async (trx, oldKeyId, replacement) => {
    const held = await trx
      .selectFrom('deployments')
      .select('app_id')
      .where('app_key_id', '=', oldKeyId)
      .executeTakeFirst();
    if (!held) return;
    await this.#sealKey(trx, held.app_id, replacement);
  };

  /** The deployments of the workspace by the App Key each holds (its key's id). */
  async keyHolders(tenantId: string): Promise<Map<string, { appId: string; slug: string; name: string }>> {
    const rows = await this.deps.db
      .selectFrom('deployments')
      .innerJoin('apps', 'apps.id', 'deployments.app_id')
      .select(['deployments.app_key_id', 'apps.id', 'apps.slug', 'apps.name'])
      .where('deployments.tenant_id', '=', tenantId)
      .execute();
    return new Map(rows.map((row) => [row.app_key_id, { appId: row.id, slug: row.slug, name: row.name }]));
  }

  /**
   * Restarts the deployment holding the App Key `keyId` (just handed over) when it should run, so
   * it calls with that key; null when no deployment holds it. A failed restart is logged and
   * reported in the state, not thrown: the rotation that called it has happened.
   */
  async restartKeyHolder(keyId: string): Promise<KeyHolder | null> {
    const held = await this.deps.db
      .selectFrom('deployments')
      .innerJoin('apps', 'apps.id', 'deployments.app_id')
      .select(['apps.id', 'apps.slug'])
      .where('deployments.app_key_id', '=', keyId)
      .executeTakeFirst();
    if (!held) return null;
    try {
      await this.#restartIfRunning(held.id);
    } catch (error) {
      this.deps.logger.warn('deployment not restarted with its rotated App Key', {
        app_id: held.id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
    return { appId: held.id, slug: held.slug, state: this.status(held.id).state };
  }

  async stop(tenantId: string, appId: string): Promise<AppView> {
    await this.#deployment(tenantId, appId);
    // Said before it is done: a restart on another instance that starts it meanwhile reads this
    // once started, and stops it again (see `#restart`).
    await this.#setDesired(appId, 'stopped');
    await this.#halt(appId);
    return this.get(tenantId, appId);
  }

  /** Stops the app's deployment, revokes its keys, removes its bindings, secrets and the app itself. */
  async remove(tenantId: string, appId: string): Promise<void> {
    const { db, keys } = this.deps;
    await this.#app(tenantId, appId);
    // A restart here that read the deployment before the delete must not start it after the stop
    // below. One on another instance finds the app gone once it has started it, and stops it
    // again (see `#run`), unless it looked before the app left the store: the stop after that
    // comes after its start. The stop before it is the one that may fail (the deployer away): then
    // nothing is deleted, and the delete can be asked again.
    await this.#deleting(appId, async () => {
      await this.#halt(appId, { deleted: true });
      const live = await db
        .selectFrom('api_keys')
        .select('id')
        .where('app_id', '=', appId)
        .where('tenant_id', '=', tenantId)
        .where('revoked_at', 'is', null)
        .execute();
      for (const key of live) await keys.revoke(key.id, tenantId);
      const deleted = await db
        .deleteFrom('apps')
        .where('id', '=', appId)
        .where('tenant_id', '=', tenantId)
        .returning('id')
        .executeTakeFirst();
      // A delete racing this one removed it first: that one answers, this one finds no app.
      if (!deleted) throw appNotFound();
      await this.#halt(appId, { deleted: true }).catch((error: unknown) => {
        this.deps.logger.warn('deployment not stopped again after its app was deleted', {
          app_id: appId,
          error: error instanceof Error ? error.message : String(error),
        });
      });
    });
  }

  async list(tenantId: string): Promise<AppView[]> {
    const rows = await appRows(this.deps.db, tenantId)
      .orderBy('apps.created_at')
      .orderBy('apps.id')
      .execute();
    return rows.map((row) => appView(row, this.deps.deployer?.status(row.id), this.deps.baseUrl));
  }

  async get(tenantId: string, appId: string): Promise<AppView> {
    if (!isUuid(appId)) throw appNotFound();
    const row = await appRows(this.deps.db, tenantId).where('apps.id', '=', appId).executeTakeFirst();
    if (!row) throw appNotFound();
    return appView(row, this.deps.deployer?.status(row.id), this.deps.baseUrl);
  }

  async rename(tenantId: string, appId: string, name: string): Promise<AppView> {
    await this.#app(tenantId, appId);
    await this.deps.db.updateTable('apps').set({ name }).where('id', '=', appId).execute();
    return this.get(tenantId, appId);
  }

  /** The origins a host's user's connection flow may return to (see `EndUserConnections`). */
  async callbackOrigins(tenantId: string, appId: string): Promise<string[]> {
    await this.#app(tenantId, appId);
    const row = await this.deps.db
      .selectFrom('apps')
      .select('callback_origins')
      .where('id', '=', appId)
      .executeTakeFirstOrThrow();
    return row.callback_origins;
  }

  async setCallbackOrigins(tenantId: string, appId: string, origins: string[]): Promise<string[]> {
    await this.#app(tenantId, appId);
    await this.deps.db
      .updateTable('apps')
      .set({ callback_origins: JSON.stringify(origins) })
      .where('id', '=', appId)
      .execute();
    return origins;
  }

  /** The app of `slug` in the workspace and whether it was deployed, for the app proxy; null when there is none. */
  async appBySlug(tenantId: string, slug: string): Promise<{ id: string; deployed: boolean } | null> {
    const row = await this.deps.db
      .selectFrom('apps')
      .leftJoin('deployments', 'deployments.app_id', 'apps.id')
      .select(['apps.id', 'deployments.app_id as deployed'])
      .where('apps.tenant_id', '=', tenantId)
      .where('apps.slug', '=', slug)
      .executeTakeFirst();
    return row ? { id: row.id, deployed: row.deployed !== null } : null;
  }

  /** What the deployer says of the app's deployment. */
  status(appId: string): DeploymentStatus {
    return (
      this.deps.deployer?.status(appId) ?? {
        state: 'stopped',
        restarts: 0,
        lastExit: null,
        since: null,
      }
    );
  }

  /** Where the app proxy sends the app's traffic, null while it does not run. */
  endpoint(appId: string): string | null {
    return this.deps.deployer?.endpoint(appId) ?? null;
  }

  async logs(tenantId: string, appId: string, tail: number): Promise<LogLine[]> {
    await this.#app(tenantId, appId);
    return this.deps.deployer?.logs(appId, tail) ?? [];
  }

  async bindings(tenantId: string, appId: string): Promise<BoundConnection[]> {
    await this.#app(tenantId, appId);
    const rows = await this.deps.db
      .selectFrom('app_connections')
      .innerJoin('connections', 'connections.id', 'app_connections.connection_id')
      .select(['connections.id', 'connections.provider', 'connections.status', 'connections.display_name'])
      .where('app_connections.app_id', '=', appId)
      .where('app_connections.tenant_id', '=', tenantId)
      .orderBy('connections.provider')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      provider: row.provider,
      status: row.status,
      displayName: row.display_name,
    }));
  }

  async secretNames(tenantId: string, appId: string): Promise<string[]> {
    await this.#app(tenantId, appId);
    const rows = await this.deps.db
      .selectFrom('app_secrets')
      .select('name')
      .where('app_id', '=', appId)
      .orderBy('name')
      .execute();
    return rows.map((row) => row.name);
  }

  /** Sets a secret (sealed); a running deployment restarts to read it. */
  async setSecret(tenantId: string, appId: string, name: string, value: string): Promise<void> {
    checkSecretName(name);
    const sealer = this.#sealer();
    await this.#app(tenantId, appId);
    await this.deps.db
      .insertInto('app_secrets')
      .values({
        app_id: appId,
        tenant_id: tenantId,
        name,
        value_sealed: sealer.seal(value, secretAad(appId, name)),
      })
      .onConflict((oc) =>
        oc.columns(['app_id', 'name']).doUpdateSet({
          value_sealed: (eb) => eb.ref('excluded.value_sealed'),
          updated_at: new Date(),
        }),
      )
      .execute();
    await this.#restartIfRunning(appId);
  }

  async unsetSecret(tenantId: string, appId: string, name: string): Promise<void> {
    checkSecretName(name);
    await this.#app(tenantId, appId);
    const removed = await this.deps.db
      .deleteFrom('app_secrets')
      .where('app_id', '=', appId)
      .where('name', '=', name)
      .executeTakeFirst();
    if (removed.numDeletedRows === 0n) throw new DeployError(404, 'Secret not found', 'NOT_FOUND');
    await this.#restartIfRunning(appId);
  }

  /**
   * Restarts the deployments this instance runs on the events their release's manifest names in
   * `restart_on`, as the store's event notices carry them (each instance restarts its own runs).
   * Answers what stops following.
   */
  followRestartEvents(store: {
    listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  }): Promise<() => Promise<void>> {
    return store.listen(EVENTS_CHANNEL, (payload) => {
      void this.#restartOnEvents(payload).catch((error: unknown) =>
        this.deps.logger.warn('deployment events not handled', {
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    });
  }

  async #restartOnEvents(payload: string | null): Promise<void> {
    const deployer = this.deps.deployer;
    // Most notices are of apps that restart on nothing (the metered proxy's usage events among
    // them): a notice naming none of the apps that list kinds is not even parsed.
    if (!deployer || payload === null || !this.#mayRestart(payload)) return;
    const restarting = new Set<string>();
    for (const [appId, , event] of (JSON.parse(payload) as EventNotice).e ?? []) {
      if (!this.#restartOn.get(appId)?.has(event.kind)) continue;
      // Only runs of this instance: a deployment stopped here has nothing to restart.
      if (deployer.status(appId).state !== 'stopped') restarting.add(appId);
    }
    for (const appId of restarting) {
      this.deps.logger.info('deployment restarted on an event its manifest names', { app_id: appId });
      await this.#restartIfRunning(appId).catch((error: unknown) =>
        this.deps.logger.warn('deployment not restarted on an event', {
          app_id: appId,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    }
  }

  /** Whether the notice mentions an app this instance started that restarts on some kind. */
  #mayRestart(payload: string): boolean {
    for (const appId of this.#restartOn.keys()) if (payload.includes(appId)) return true;
    return false;
  }

  /** Starts every deployment that should be running (a platform boot). Failures are logged, not thrown. */
  async resume(): Promise<void> {
    if (!this.deps.deployer) return;
    const rows = await this.deps.db
      .selectFrom('deployments')
      .innerJoin('tool_releases', 'tool_releases.id', 'deployments.release_id')
      .select([
        'deployments.app_id',
        'deployments.tenant_id',
        'tool_releases.artifact',
        'tool_releases.manifest',
      ])
      .where('deployments.desired_state', '=', 'running')
      .execute();
    for (const row of rows) {
      if (!row.artifact) continue;
      const artifact = row.artifact;
      try {
        await this.#starting(row.app_id, async (signal) => {
          const runs = await this.#run(
            {
              appId: row.app_id,
              tenantId: row.tenant_id,
              artifact,
              env: await this.#environment(row.app_id),
            },
            row.manifest,
            signal,
          );
          if (runs) await this.#haltIfStoppedMeanwhile(row.app_id);
        });
      } catch (error) {
        this.deps.logger.warn('deployment not resumed', {
          app_id: row.app_id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  /** Restarts the deployment when it should run; nothing when its app is deleted before it would start. */
  #restartIfRunning(appId: string): Promise<void> {
    return this.#starting(appId, (signal) => this.#restart(appId, signal));
  }

  async #restart(appId: string, signal: AbortSignal): Promise<void> {
    const row = await this.deps.db
      .selectFrom('deployments')
      .innerJoin('tool_releases', 'tool_releases.id', 'deployments.release_id')
      .select([
        'deployments.tenant_id',
        'deployments.desired_state',
        'tool_releases.artifact',
        'tool_releases.manifest',
      ])
      .where('deployments.app_id', '=', appId)
      .executeTakeFirst();
    if (row?.desired_state !== 'running' || !row.artifact || !this.deps.deployer) return;
    let runs: boolean;
    try {
      runs = await this.#run(
        { appId, tenantId: row.tenant_id, artifact: row.artifact, env: await this.#environment(appId) },
        row.manifest,
        signal,
      );
    } catch (error) {
      await this.#setDesired(appId, 'stopped');
      throw failedDeploy(error);
    }
    if (runs) await this.#haltIfStoppedMeanwhile(appId);
  }

  /**
   * After a start that only carries on what should run (a restart, a boot): an app stopped on
   * another instance meanwhile had its stop come first there, so this start would outlive it.
   */
  async #haltIfStoppedMeanwhile(appId: string): Promise<void> {
    if ((await this.#desiredState(appId)) !== 'running') await this.#halt(appId);
  }

  /**
   * Starts the deployment through the deployer and remembers the `restart_on` kinds of the
   * release's manifest while it runs here; a start that fails leaves nothing running to restart.
   * Resolves whether it runs: a start the app's delete aborted (see `#starting`) is nothing, not a
   * failure: the deployer calls it off in its turn, and what started before the delete's stop
   * reached it is stopped. So is what started for an app another instance deleted meanwhile
   * (its delete removes the app before it stops the deployment).
   */
  async #run(spec: DeploymentSpec, manifest: unknown, signal: AbortSignal): Promise<boolean> {
    try {
      await this.#deployer().deploy(spec, { signal });
    } catch (error) {
      this.#restartOn.delete(spec.appId);
      if (signal.aborted) return false;
      throw error;
    }
    // Started anyway, by a deployer that does not look at the signal, or for an app deleted
    // elsewhere: the app is gone, so is its run.
    if (signal.aborted || (await this.#desiredState(spec.appId)) === null) {
      await this.#halt(spec.appId, { deleted: true });
      return false;
    }
    const kinds = (manifest as { restart_on?: unknown } | null)?.restart_on;
    if (Array.isArray(kinds) && kinds.length > 0) this.#restartOn.set(spec.appId, new Set(kinds));
    else this.#restartOn.delete(spec.appId);
    return true;
  }

  /**
   * Stops the deployment here (when a deployer runs it): it restarts on no event after, and a
   * `deleted` app's is forgotten by the deployer too.
   */
  async #halt(appId: string, { deleted = false } = {}): Promise<void> {
    this.#restartOn.delete(appId);
    const deployer = this.deps.deployer;
    if (deleted && deployer?.remove) await deployer.remove(appId);
    else await deployer?.stop(appId);
  }

  /** Runs `start` (which reads the deployment and runs it) with a signal a delete of the app aborts. */
  async #starting<T>(appId: string, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const app = this.#inFlightOf(appId);
    const controller = new AbortController();
    // What it reads may be gone by the time it would start: the app is being deleted.
    if (app.deletes > 0) controller.abort();
    app.starts.add(controller);
    try {
      return await start(controller.signal);
    } finally {
      app.starts.delete(controller);
      this.#settle(appId);
    }
  }

  /** Runs `remove` (a delete of the app) with the app's starts aborted, those begun meanwhile too. */
  async #deleting<T>(appId: string, remove: () => Promise<T>): Promise<T> {
    const app = this.#inFlightOf(appId);
    app.deletes += 1;
    for (const start of app.starts) start.abort();
    try {
      return await remove();
    } finally {
      app.deletes -= 1;
      this.#settle(appId);
    }
  }

  #inFlightOf(appId: string): { deletes: number; starts: Set<AbortController> } {
    let app = this.#inFlight.get(appId);
    if (!app) {
      app = { deletes: 0, starts: new Set() };
      this.#inFlight.set(appId, app);
    }
    return app;
  }

  /** Forgets the app once no start or delete of it is under way: a deleted app leaves nothing here. */
  #settle(appId: string): void {
    const app = this.#inFlight.get(appId);
    if (app && app.deletes === 0 && app.starts.size === 0) this.#inFlight.delete(appId);
  }

  /**
   * Gives the deployment a new App Key when the one sealed for it no longer works (revoked, or
   * rotated away before rotations handed the replacement over): started with it, the deployment
   * could only fail, and nothing else can hand it one.
   */
  async #keepKeyLive(tenantId: string, appId: string): Promise<void> {
    const { db, keys } = this.deps;
    const held = await db
      .selectFrom('deployments')
      .innerJoin('apps', 'apps.id', 'deployments.app_id')
      .leftJoin('api_keys', (join) =>
        join.onRef('api_keys.id', '=', 'deployments.app_key_id').on(liveKeyAt(Date.now())),
      )
      .select(['apps.slug', 'api_keys.id as liveKeyId'])
      .where('deployments.app_id', '=', appId)
      .executeTakeFirstOrThrow();
    if (held.liveKeyId) return;
    const appKey = await keys.issue({ tenantId, kind: 'app', appId, name: `Deployment ${held.slug}` });
    await this.#sealKey(db, appId, appKey);
  }

  async #sealKey(
    db: Kysely<Database> | Transaction<Database>,
    appId: string,
    key: { id: string; key: string },
  ): Promise<void> {
    await db
      .updateTable('deployments')
      .set({
        app_key_id: key.id,
        app_key_sealed: this.#sealer().seal(key.key, keyAad(appId)),
        updated_at: new Date(),
      })
      .where('app_id', '=', appId)
      .execute();
  }

  /** The deployment's environment: its App Key, the platform's URL, its inputs and secrets. */
  async #environment(appId: string): Promise<Record<string, string>> {
    const sealer = this.#sealer();
    const { db } = this.deps;
    const deployment = await db
      .selectFrom('deployments')
      .select(['app_key_sealed', 'inputs'])
      .where('app_id', '=', appId)
      .executeTakeFirstOrThrow();
    const secrets = await db
      .selectFrom('app_secrets')
      .select(['name', 'value_sealed'])
      .where('app_id', '=', appId)
      .execute();
    const env: Record<string, string> = { ...deployment.inputs };
    for (const secret of secrets)
      env[secret.name] = sealer.open(secret.value_sealed, secretAad(appId, secret.name));
    env.SERVICE_API_KEY = sealer.open(deployment.app_key_sealed, keyAad(appId));
    env.SERVICE_BASE_URL = this.deps.baseUrl;
    return env;
  }

  async #app(tenantId: string, appId: string) {
    if (!isUuid(appId)) throw appNotFound();
    const app = await this.deps.db
      .selectFrom('apps')
      .select(['id', 'tool_id'])
      .where('id', '=', appId)
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    if (!app) throw appNotFound();
    return app;
  }

  async #deployment(tenantId: string, appId: string) {
    await this.#app(tenantId, appId);
    const row = await this.deps.db
      .selectFrom('deployments')
      .select(['app_id', 'release_id'])
      .where('app_id', '=', appId)
      .executeTakeFirst();
    if (!row) throw new DeployError(404, 'The app was never deployed', 'NOT_DEPLOYED');
    return row;
  }

  /** What the store says the deployment should be now; null once its app is deleted. */
  async #desiredState(appId: string): Promise<DesiredState | null> {
    const row = await this.deps.db
      .selectFrom('deployments')
      .select('desired_state')
      .where('app_id', '=', appId)
      .executeTakeFirst();
    return row?.desired_state ?? null;
  }

  async #setDesired(appId: string, state: DesiredState): Promise<void> {
    await this.deps.db
      .updateTable('deployments')
      .set({ desired_state: state, updated_at: new Date() })
      .where('app_id', '=', appId)
      .execute();
  }

  #deployer(): Deployer {
    if (!this.deps.deployer) {
      throw new DeployError(503, 'Deployments are not enabled on this platform', 'DEPLOYER_DISABLED');
    }
    return this.deps.deployer;
  }

  #sealer(): Sealer {
    if (!this.deps.sealer) {
      throw new DeployError(503, 'Deployments need SERVICE_STORE_ENCRYPTION_KEY', 'ENCRYPTION_KEY_MISSING');
    }
    return this.deps.sealer;
  }
}

const keyAad = (appId: string) => `deployment-key:${appId}`;
const secretAad = (appId: string, name: string) => `app-secret:${appId}:${name}`;
const slugTaken = (slug: string) =>
  new DeployError(409, `This workspace already has an app "${slug}"`, 'SLUG_TAKEN');
const appNotFound = () => new DeployError(404, 'App not found', 'NOT_FOUND');
const isUuid = (value: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);

function checkSecretName(name: string): void {
  if (!SECRET_NAME.test(name) || isReservedName(name)) {
    throw new DeployError(
      400,
      'A secret name is A-Z, 0-9 and _ (up to 64, starting with a letter), and not one the platform or the process start reads: PORT, PATH, HOME, SERVICE_*, LD_*, NODE_* (NODE_ENV is free), BASH_ENV, ENV, SHELLOPTS, BASHOPTS, PS4, IFS, OPENSSL_CONF, OPENSSL_MODULES, OPENSSL_ENGINES, GCONV_PATH, GLIBC_TUNABLES or LOCPATH',
      'INVALID_SECRET_NAME',
    );
  }
}

/** A deployer's failure is the tenant's 502; any other error stays what it was. */
function failedDeploy(error: unknown): unknown {
  if (error instanceof DeployerError) return new DeployError(502, error.message, 'DEPLOY_FAILED');
  return error;
}
