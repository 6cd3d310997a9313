/**
 * Anonymous sessions and their adoption: a visitor without a sign-in gets a cookie and keeps
 * threads and files; their first signed-in request moves those to the user (once, also when two
 * first requests race on two instances), leaves the activity log behind and retires the cookie.
 *
 * @see docs/wire.md "Anonymous sessions"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import type { Service } from '../../src/wire/create-service.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { reactiveModel } from './support/models.js';
import { callerFor, ORIGIN, readTurn, testService } from './support/wire.js';

const model = () => reactiveModel(() => ({ text: ['Hello.'] }));

/** Requests with an optional signed-in user and an optional anonymous cookie. */
function as(service: Service, user: string | null, cookie?: string) {
  return (path: string, init: RequestInit & { json?: unknown } = {}) =>
    callerFor((r) => service.fetch(r), user)(path, {
      ...init,
      headers: { ...(cookie ? { cookie: `service_anon=${cookie}` } : {}), ...(init.headers ?? {}) },
    });
}

function anonCookieOf(response: Response): { value: string; header: string } | null {
  const header = response.headers.getSetCookie().find((h) => h.startsWith('service_anon='));
  if (!header) return null;
  return { value: header.slice('service_anon='.length).split(';')[0]!, header };
}

async function threadIds(service: Service, user: string | null, cookie?: string): Promise<string[]> {
  const answer = await as(service, user, cookie)('/threads');
  return ((await answer.json()) as { threads: { id: string }[] }).threads.map((t) => t.id).sort();
}

for (const kind of STORE_KINDS) {
  describe(`wire anonymous sessions (${kind})`, () => {
    let store: TestStore;
    let service: Service;

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, { anonymous: true, model: model() });
    });
    afterAll(async () => {
      await service?.close();
      await store?.dispose();
    });

    /** A new visitor with one thread (`id`) and one file; answers its cookie. */
    async function visitor(threadId: string): Promise<string> {
      const first = await as(service, null)('/chat', {
        method: 'POST',
        json: { id: threadId, message: 'hi' },
      });
      expect(first.status).toBe(200);
      const cookie = anonCookieOf(first);
      expect(cookie?.header).toMatch(/; Max-Age=2592000; Path=\/api\/service; HttpOnly; SameSite=Lax$/);
      await readTurn(first);
      const upload = await as(
        service,
        null,
        cookie!.value,
      )('/files', {
        method: 'POST',
        headers: {
          'x-service-upload': 'raw',
          'content-type': 'text/plain',
          'x-service-file-name': `${threadId}.txt`,
        },
        body: 'notes',
      });
      expect(upload.status).toBe(201);
      expect(anonCookieOf(upload)).toBeNull();
      return cookie!.value;
    }

    it('keeps a visitor’s threads and files under their cookie, and only theirs', async () => {
      const cookie = await visitor('anon-1');
      expect(await threadIds(service, null, cookie)).toEqual(['anon-1']);
      const stranger = await as(service, null)('/threads');
      expect(((await stranger.json()) as { threads: unknown[] }).threads).toEqual([]);
      const owners = await store.db.selectFrom('wire_anonymous_sessions').select('owner').execute();
      // The store keeps a hash of the cookie, never the cookie.
      expect(owners.every((o) => !o.owner.includes(cookie))).toBe(true);
    });

    it('adopts threads and files on the first signed-in request, leaves activity behind, retires the cookie', async () => {
      const cookie = await visitor('anon-2');
      const anonOwner = (
        await store.db
          .selectFrom('wire_threads')
          .select('owner')
          .where('id', '=', 'anon-2')
          .executeTakeFirstOrThrow()
      ).owner;
      const signedIn = await as(service, 'ada', cookie)('/threads');
      expect(anonCookieOf(signedIn)?.header).toMatch(/^service_anon=; Max-Age=0; Path=\/api\/service/);
      const threads = ((await signedIn.json()) as { threads: { id: string }[] }).threads.map((t) => t.id);
      expect(threads).toEqual(['anon-2']);
      const thread = (await (await as(service, 'ada')('/threads/anon-2')).json()) as {
        thread: { messages: unknown[]; latestRun: { status: string } | null };
      };
      expect(thread.thread.messages).toHaveLength(2);
      expect(thread.thread.latestRun?.status).toBe('completed');
      const files = (await (await as(service, 'ada')('/files')).json()) as { files: { name: string }[] };
      expect(files.files.map((f) => f.name)).toEqual(['anon-2.txt']);

      // The activity log stays with the anonymous owner.
      await service.context.audit.flush();
      const kept = await store.db
        .selectFrom('wire_audit_events')
        .select('kind')
        .where('owner', '=', anonOwner)
        .execute();
      expect(kept.map((e) => e.kind)).toContain('file.uploaded');
      // The retired cookie is no session any more: it gets a new, empty one.
      const after = await as(service, null, cookie)('/threads');
      expect(((await after.json()) as { threads: unknown[] }).threads).toEqual([]);
      expect(anonCookieOf(after)?.value).not.toBe(cookie);
    });

    it('gives a thread whose id the user already has a new id', async () => {
      const mine = await as(service, 'cy')('/chat', {
        method: 'POST',
        json: { id: 'same', message: 'mine' },
      });
      await readTurn(mine);
      const cookie = await visitor('same');
      await as(service, 'cy', cookie)('/threads');
      const ids = await threadIds(service, 'cy');
      expect(ids).toHaveLength(2);
      expect(ids).toContain('same');
      expect(ids.find((id) => id !== 'same')).toMatch(/^thr_/);
    });

    it('adopts once when two first requests race on two instances', async () => {
      const cookie = await visitor('raced');
      let second: Store | null = null;
      let other: Service | null = null;
      try {
        second = kind === 'postgres' ? await openSecondHandle(store) : null;
        other = await testService(second ?? store, { anonymous: true, model: model() });
        const [a, b] = await Promise.all([
          as(service, 'dee', cookie)('/threads'),
          as(other, 'dee', cookie)('/threads'),
        ]);
        expect([a.status, b.status]).toEqual([200, 200]);
        expect(await threadIds(service, 'dee')).toEqual(['raced']);
        await other.close();
        other = null;
        await service.context.audit.flush();
        const adoptions = await store.db
          .selectFrom('wire_audit_events')
          .select('kind')
          .where('owner', '=', 'dee')
          .where('kind', '=', 'session.adopted')
          .execute();
        expect(adoptions).toHaveLength(1);
      } finally {
        await other?.close();
        await second?.close();
      }
    });
  });
}

describe('wire without anonymous sessions', () => {
  it('refuses nobody-signed-in with 403 and sets no cookie', async () => {
    const store = await openTestStore('pglite');
    const service = await testService(store);
    try {
      const answer = await callerFor((r) => service.fetch(r), null)('/threads');
      expect(answer.status).toBe(403);
      expect(answer.headers.getSetCookie()).toEqual([]);
      expect(ORIGIN).toBe('http://host.test');
    } finally {
      await service.close();
      await store.dispose();
    }
  });
});
