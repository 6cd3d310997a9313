/**
 * A stand-in for what the wire does not serve yet: `drifted` on app answers and
 * `POST /apps/:id/rebase-pin`, answered exactly as the apps interface says, in front of a real
 * wire. Every other call goes to the real wire untouched.
 *
 * FAKE: switch these tests to the real route (drop this wrapper, change the seed instead) once
 * the wire serves `drifted` and rebase-pin.
 */
import type { AppsWire } from '../../../core/test/support/apps-wire.js';

export interface RebasePinFake {
  /** The hash of each component's current seed, as the host changed it; absent: not changed. */
  seedHashes: Map<string, string>;
  /** What the next rebase-pin does: replay into `document`, or fail at `wish` after `replayed`. */
  next:
    | { outcome: 'replay'; document: Record<string, unknown>; replayed: number }
    | { outcome: 'fail'; replayed: number; remaining: number; wish: string };
  /** The rebase-pin calls made, with their bodies. */
  calls: { appId: string; body: unknown }[];
}

export function withRebasePin(wire: AppsWire, user: string, fake: RebasePinFake): typeof fetch {
  const real = wire.fetchAs(user);
  return async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    const rebase = /\/apps\/([^/]+)\/rebase-pin$/.exec(url.pathname);
    if (rebase && method === 'POST') {
      const appId = decodeURIComponent(rebase[1]!);
      const body = JSON.parse(String(init?.body ?? '{}')) as { fromVersion?: number };
      fake.calls.push({ appId, body });
      const app = await wire.apps.getApp(user, appId);
      if (!app) return errorAnswer(404, 'not_found', 'No such app.');
      const seedHash = app.baselineKey ? fake.seedHashes.get(app.baselineKey) : undefined;
      if (!seedHash || seedHash === app.baselineHash) {
        return errorAnswer(409, 'not_drifted', 'This remix is already on its component’s current version.');
      }
      if (fake.next.outcome === 'fail') {
        const { replayed, remaining, wish } = fake.next;
        return errorAnswer(422, 'rebase_failed', `A wish could not be replayed: ${wish}`, {
          replayed,
          failed: 1,
          remaining,
          wish,
        });
      }
      const outcome = await wire.apps.rebase(user, appId, {
        fromVersion: body.fromVersion ?? app.version,
        baselineHash: seedHash,
        document: fake.next.document as never,
        contentHash: `sha256:rebased-${app.version + 1}`,
        wishes: [],
      });
      if (!outcome.ok) return errorAnswer(409, 'app_moved', 'The app moved since that version.');
      const fresh = await (await real(`${wire.baseUrl}/apps/${encodeURIComponent(appId)}`)).json();
      return Response.json({ app: drifted(fresh.app, fake), replayed: fake.next.replayed });
    }
    const answer = await real(input, init);
    // Every answer carrying an app gains `drifted` (list, get, seed, import, fork).
    if (!answer.ok || !url.pathname.includes('/apps') || url.pathname.endsWith('/export')) return answer;
    const body = await answer.json();
    if (Array.isArray(body.apps)) body.apps = body.apps.map((app: AppJson) => drifted(app, fake));
    if (body.app) body.app = drifted(body.app, fake);
    return Response.json(body, { status: answer.status });
  };
}

interface AppJson {
  kind: string;
  baselineKey: string | null;
  baselineHash: string | null;
}

function drifted(app: AppJson, fake: RebasePinFake) {
  const seedHash = app.baselineKey ? fake.seedHashes.get(app.baselineKey) : undefined;
  const isRemix = app.kind === 'remix' || app.kind === 'review';
  return { ...app, drifted: isRemix && seedHash !== undefined && seedHash !== app.baselineHash };
}

function errorAnswer(status: number, code: string, message: string, fields: Record<string, unknown> = {}) {
  return Response.json({ error: { code, message, ...fields } }, { status });
}
