/**
 * Two platform instances on one store and one deployer they share (as a cluster scheduler is
 * shared): a restart on one instance that is still starting when the other deletes or stops the
 * app does not leave it running. The deployer here is a stand-in for the scheduler (it runs
 * nothing, it keeps what it was asked to run); the instances, store and HTTP API are real.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import type { Deployer, DeploymentSpec, DeploymentStatus } from '../src/deploy/deployer.js';
import { publishTestRelease } from './support/deploy.js';
import { devSignIn, type RunningPlatform, sessionClient, startPlatformAtOwnUrl } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

/** What a shared scheduler keeps: which apps run. `hold` keeps the next deploy of an app waiting. */
class SharedScheduler implements Deployer {
  readonly running = new Set<string>();
  #held = new Map<string, { reached: () => void; released: Promise<void> }>();

  /** The next deploy of `appId` waits until `release` is called; `reached` resolves when it comes. */
  hold(appId: string): { reached: Promise<void>; release: () => void } {
    let reached: () => void = () => {};
    let release: () => void = () => {};
    const reachedP = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#held.set(appId, { reached, released });
    return { reached: reachedP, release };
  }

  async deploy(spec: DeploymentSpec, options: { signal?: AbortSignal } = {}): Promise<void> {
    const held = this.#held.get(spec.appId);
    if (held) {
      this.#held.delete(spec.appId);
      held.reached();
      await held.released;
    }
    if (options.signal?.aborted) throw new Error('called off');
    this.running.add(spec.appId);
  }
  /**
   * Runs once, once the next `stop` or `remove` of any app has taken effect and before it
   * returns: where a test lets another instance act in the middle of a stop or a delete.
   */
  afterNextHalt: (() => Promise<void>) | null = null;
  async stop(appId: string): Promise<void> {
    this.running.delete(appId);
    await this.#afterHalt();
  }
  /** Set to make the next `remove` fail, as a scheduler out of reach does. */
  failNextRemove = false;
  async remove(appId: string): Promise<void> {
    if (this.failNextRemove) {
      this.failNextRemove = false;
      throw new Error('scheduler unreachable');
    }
    this.running.delete(appId);
    await this.#afterHalt();
  }
  async #afterHalt(): Promise<void> {
    const hook = this.afterNextHalt;
    this.afterNextHalt = null;
    await hook?.();
  }
  status(appId: string): DeploymentStatus {
    return {
      state: this.running.has(appId) ? 'running' : 'stopped',
      restarts: 0,
      lastExit: null,
      since: null,
    };
  }
  endpoint(): string | null {
    return null;
  }
  logs() {
    return [];
  }
  async close(): Promise<void> {}
}

let store: TestStore;
let one: RunningPlatform;
let two: RunningPlatform;
const scheduler = new SharedScheduler();
let emails = 0;

beforeAll(async () => {
  store = await openTestStore();
  const options = { deployer: scheduler, rateLimits: { deploy: { limit: 10_000, windowMs: 60_000 } } };
  one = await startPlatformAtOwnUrl(store, options);
  two = await startPlatformAtOwnUrl(store, options);
  await publishTestRelease(one.platform, {
    slug: 'shared-tool',
    wizardInputs: [{ key: 'TOKEN', label: 'Token', type: 'secret', required: false }],
  });
}, 120_000);
afterAll(async () => {
  await one?.close();
  await two?.close();
  await store?.dispose();
});

/** An app deployed through instance one, by a signed-in owner of a funded workspace. */
async function deployedApp(): Promise<{ cookie: string; appId: string }> {
  const email = `shared-${++emails}@example.test`;
  const cookie = await devSignIn(one, email);
  const user = await store.db
    .selectFrom('users')
    .select('default_tenant_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  await post(store.db, {
    tenantId: user.default_tenant_id!,
    amountMicros: 5_000_000,
    kind: 'grant',
    idempotencyKey: `grant-${email}`,
  });
  const created = await sessionClient(() => one.url)(cookie, 'POST', '/api/deploy', {
    toolSlug: 'shared-tool',
    slug: `shared-${emails}`,
  });
  expect(created.status, await created.clone().text()).toBe(201);
  const { app } = (await created.json()) as { app: { id: string } };
  expect(scheduler.running.has(app.id)).toBe(true);
  return { cookie, appId: app.id };
}

describe('a restart on one instance racing a change on another', () => {
  const onOne = sessionClient(() => one.url);
  const onTwo = sessionClient(() => two.url);

  /** Sets a secret through instance two (which restarts the app there), its deploy held. */
  async function restartHeldOnTwo(cookie: string, appId: string) {
    const held = scheduler.hold(appId);
    const secret = onTwo(cookie, 'PUT', `/api/apps/${appId}/secrets/TOKEN`, { value: 'v' });
    await held.reached;
    return { secret, release: held.release };
  }

  it('a delete on one wins over a restart still starting on two', async () => {
    const { cookie, appId } = await deployedApp();
    const { secret, release } = await restartHeldOnTwo(cookie, appId);
    expect((await onOne(cookie, 'DELETE', `/api/apps/${appId}`)).status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(false);
    // The restart's deploy goes through after the delete's stop: instance two finds the app gone.
    release();
    expect((await secret).status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(false);
  });

  // Two's restart finishes just after one's first call to the scheduler. A delete: two's deploy
  // returns and it reads the store, where the app still is; the delete's stop after removing the
  // app ends it. A stop: it is in the store before the scheduler is asked, so two reads it and
  // stops what it started.
  it.each([
    ['a delete', 'DELETE', ''],
    ['a stop', 'POST', '/stop'],
  ] as const)('%s wins over a restart on two that finishes in the middle of it', async (_, method, path) => {
    const { cookie, appId } = await deployedApp();
    const { secret, release } = await restartHeldOnTwo(cookie, appId);
    let restarted: Response | null = null;
    scheduler.afterNextHalt = async () => {
      release();
      restarted = await secret;
    };
    const body = method === 'POST' ? {} : undefined;
    expect((await onOne(cookie, method, `/api/apps/${appId}${path}`, body)).status).toBe(200);
    expect(restarted!.status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(false);
  });

  it('a delete the deployer fails keeps the app, so the delete can be asked again', async () => {
    const { cookie, appId } = await deployedApp();
    scheduler.failNextRemove = true;
    const failed = await onOne(cookie, 'DELETE', `/api/apps/${appId}`);
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect((await onOne(cookie, 'GET', `/api/apps/${appId}`)).status).toBe(200);
    expect((await onTwo(cookie, 'DELETE', `/api/apps/${appId}`)).status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(false);
    expect((await onOne(cookie, 'GET', `/api/apps/${appId}`)).status).toBe(404);
  });

  it('a stop on one wins over a restart still starting on two', async () => {
    const { cookie, appId } = await deployedApp();
    const { secret, release } = await restartHeldOnTwo(cookie, appId);
    const stopped = await onOne(cookie, 'POST', `/api/apps/${appId}/stop`, {});
    expect(stopped.status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(false);
    release();
    expect((await secret).status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(false);
    // Stopped is what it stays: a redeploy starts it again, on either instance.
    expect((await onTwo(cookie, 'POST', `/api/apps/${appId}/redeploy`, {})).status).toBe(200);
    expect(scheduler.running.has(appId)).toBe(true);
  });
});
