/**
 * The demo's saved screen: gives a person the app "My orders" (the document the demo model builds
 * for "make a screen of my orders") placed in `orders.side`, through the wire's own routes, as
 * that person: `POST /apps/import` of an export file, then `PUT /apps/placements`. A person who
 * already has an app named so keeps theirs and gets no second one.
 */
import { ORDERS_SIDE_SLOT } from './apps.js';
import { ORDERS_SCREEN_TITLE, ordersScreen } from './demo-model-apps.js';
import type { RunningHost } from './host.js';

export interface SeededScreen {
  appId: string;
  /** False when the person had an app named "My orders" already (it is left as it is). */
  created: boolean;
}

export async function seedOrdersScreen(
  host: Pick<RunningHost, 'url' | 'service' | 'sessionFor'>,
  email: string,
): Promise<SeededScreen> {
  const token = host.sessionFor(email);
  if (!token) throw new Error(`Cannot sign in as ${email}: not an email address.`);
  // In process: the same routes a browser or curl reaches at `{url}/api/service`.
  const wire = async (method: string, path: string, contentType?: string, body?: unknown) => {
    const answer = await host.service.fetch(
      new Request(`${host.url}/api/service${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(contentType ? { 'content-type': contentType } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    if (!answer.ok) throw new Error(`${method} ${path} answered ${answer.status}: ${await answer.text()}`);
    return answer.json() as Promise<Record<string, unknown>>;
  };

  const { apps } = (await wire('GET', '/apps?limit=200')) as { apps: Array<{ id: string; name: string }> };
  const existing = apps.find((app) => app.name === ORDERS_SCREEN_TITLE);
  if (existing) return { appId: existing.id, created: false };

  const exportFile = {
    format: 'service-app',
    formatVersion: 1,
    name: ORDERS_SCREEN_TITLE,
    document: ordersScreen(),
  };
  const imported = (await wire('POST', '/apps/import', 'application/vnd.service.app+json', exportFile)) as {
    app: { id: string };
  };
  await wire('PUT', '/apps/placements', 'application/json', {
    slot: ORDERS_SIDE_SLOT.id,
    appId: imported.app.id,
  });
  return { appId: imported.app.id, created: true };
}
