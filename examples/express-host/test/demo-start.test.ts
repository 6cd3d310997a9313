/**
 * `pnpm start` runs this host beside the platform: boot it as `pnpm start` does, then run the
 * curl lines of docs/wire.md ("Drive a turn with curl") and docs/door.md ("The door in the demo
 * host") exactly as written, and the whole OAuth flow of the MCP door with the MCP SDK client.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itWithPrograms } from '../../../packages/core/test/support/programs.js';
import { bootPlatform, freePort, type PlatformProcess } from '../../platform/test/support/boot.js';
import {
  connectWithBearer,
  exchangeServiceKey,
  MemoryOAuthProvider,
  newClient,
  signInAndApprove,
} from './support/mcp-client.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let cwd: string;
let env: Record<string, string>;
let platform: PlatformProcess;

// Booting waits up to bootPlatform's own minute; on a busy 2-core machine the hook needs more.
beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'svc-demo-host-'));
  env = { PORT: String(await freePort()), SERVICE_DEMO_HOST_PORT: String(await freePort()) };
  platform = await bootPlatform(cwd, env);
}, 180_000);
afterAll(async () => {
  await platform?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

/** The shell block after `<!-- name -->` in a doc page. */
/**
 * Runs shell lines in the demo's folder as bash does, strictly; answers what they print. Not
 * `execFileSync`: a test process blocked for the script's seconds cannot see the demo closing its
 * idle keep-alive connections, and its next `fetch` would go out on one already closed.
 */
async function runShell(script: string): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    encoding: 'utf8',
  });
  return stdout;
}

function docBlock(page: string, name: string): string {
  const doc = readFileSync(join(ROOT, page), 'utf8');
  const match = new RegExp(`<!-- ${name} -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(doc);
  if (!match) throw new Error(`${page} has no block ${name}`);
  return match[1]!;
}

interface DemoHostRecord {
  url: string;
  signIn: { page: string };
  mcp: { url: string; connect: string; tokenUrl: string; serviceKey: string; subjectToken: string };
}

const demoHost = (): DemoHostRecord => JSON.parse(readFileSync(join(cwd, '.service/demo.json'), 'utf8')).host;

describe('pnpm start demo host', () => {
  it('records the host, its sign-in and its MCP door with a service key in .service/demo.json', () => {
    const host = demoHost();
    expect(host).toMatchObject({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      wire: expect.stringMatching(/\/api\/service$/),
      signIn: { method: 'POST', body: { email: 'demo@example.com' }, page: `${host.url}/login` },
      mcp: {
        url: `${host.url}/api/service/mcp`,
        connect: `${host.url}/api/service/mcp/connect`,
        tokenUrl: `${host.url}/api/service/mcp/token`,
        clientId: 'service',
        serviceKey: expect.stringMatching(/^mcp_svc_[A-Za-z0-9_-]{43}$/),
        subjectToken: 'user:demo@example.com',
      },
    });
    expect(platform.output()).not.toContain(host.mcp.serviceKey);
  });

  it('gives demo@example.com the saved screen My orders, placed beside their orders', async () => {
    const seeded = await demoScreen();
    expect(seeded.apps).toEqual([expect.objectContaining({ name: 'My orders', kind: 'app', version: 1 })]);
    expect(seeded.placements).toEqual([
      expect.objectContaining({ slot: 'orders.side', appId: seeded.apps[0]!.id }),
    ]);
    const opened = await seeded.wire(`/apps/${seeded.apps[0]!.id}/open`, { method: 'POST', body: '{}' });
    expect(opened).toMatchObject({
      document: { title: 'My orders', queries: { orders: { tool: 'list_orders' } } },
      queries: { orders: { count: 2 } },
      problems: [],
    });
  });

  it('keeps exactly that one screen when it boots again on the same data', async () => {
    const before = await demoScreen();
    expect(await platform.stop()).toBe(0);
    platform = await bootPlatform(cwd, env);
    const after = await demoScreen();
    expect(after.apps.map((app) => app.id)).toEqual(before.apps.map((app) => app.id));
    expect(after.placements.map(({ slot, appId }) => ({ slot, appId }))).toEqual([
      { slot: 'orders.side', appId: before.apps[0]!.id },
    ]);
  }, 180_000);

  it('prints the chat page in the banner, where a signed-out browser is sent to sign in', async () => {
    const chat = /^Chat page of the demo host: (\S+)$/m.exec(platform.output())?.[1];
    expect(chat).toBe(`${demoHost().url}/`);
    const answer = await fetch(chat!, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe('/login?return_to=%2F');
  });

  it('prints the orders page in the banner, where a signed-out browser is sent to sign in', async () => {
    const orders = /^Orders page of the demo host: (\S+) /m.exec(platform.output())?.[1];
    expect(orders).toBe(`${demoHost().url}/orders`);
    const answer = await fetch(orders!, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe('/login?return_to=%2Forders');
  });

  itWithPrograms(
    ['curl'],
    'builds a screen onto the orders page with the curl lines of docs/apps.md',
    async () => {
      const out = await runShell(docBlock('docs/apps.md', 'demo-app'));
      expect(out).toContain('"type":"data-service-app"');
      expect(out).toContain('"state":"final"');
      expect(out).toMatch(
        /"output":\{"status":"built","app":"My orders","where":"Beside my orders on \/orders"/,
      );
      expect(out).toMatch(/\{"placements":\[\{"slot":"orders\.side","appId":"app_/);
    },
  );

  it('prints where the dashboard is: a page that sends a signed-out browser to sign in and back', async () => {
    const dashboard = /^Dashboard: (\S+) \(sign in as demo@example\.com/m.exec(platform.output())?.[1];
    expect(dashboard).toMatch(/\/$/);
    const answer = await fetch(dashboard!, { redirect: 'manual' });
    expect(answer.status).toBe(303);
    const signInPage = await fetch(new URL(answer.headers.get('location')!, dashboard).toString());
    expect(signInPage.status).toBe(200);
    const signIn = /<a class="button" href="([^"]+)">Sign in<\/a>/
      .exec(await signInPage.text())?.[1]
      ?.replaceAll('&amp;', '&');
    expect(signIn).toContain('/auth/v1/sign-in?return_to=%2F');
    const page = await fetch(new URL(signIn!, dashboard).toString());
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
  });

  itWithPrograms(['curl'], 'drives a turn with the curl lines of docs/wire.md', async () => {
    const out = await runShell(docBlock('docs/wire.md', 'demo-turn'));
    expect(out).toContain('"type":"tool-output-available"');
    expect(out).toContain('A-1001');
    expect(out.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  itWithPrograms(
    ['curl'],
    'parks a cancellation, approves it and reads the turn on, with the curl lines of docs/wire.md',
    async () => {
      const script = `${docBlock('docs/wire.md', 'demo-turn')}\n${docBlock('docs/wire.md', 'demo-approve')}`;
      const out = await runShell(script);
      // The cancellation's stream ends at the pause; the replay after the decision reads on to the end.
      expect(out).toContain('"status":"awaiting_approval"');
      expect(out).toContain('{"approvals":[');
      expect(out).toMatch(
        /"type":"tool-output-available","toolCallId":"[^"]+","output":\{"id":"A-1001"[^}]*"status":"cancelled"/,
      );
      expect(out.trimEnd().endsWith('data: [DONE]')).toBe(true);
    },
  );

  itWithPrograms(
    ['curl'],
    'calls a tool with the service key, with the curl lines of docs/door.md',
    async () => {
      const out = await runShell(docBlock('docs/door.md', 'demo-door'));
      const message = JSON.parse(/^data: (.+)$/m.exec(out)?.[1] ?? out);
      expect(message.result.structuredContent.orders.map((o: { id: string }) => o.id)).toEqual([
        'A-1001',
        'A-1002',
      ]);
    },
  );

  it('lists tools with the service key through the MCP SDK client', async () => {
    const { mcp } = demoHost();
    const answer = await exchangeServiceKey(mcp.url, { key: mcp.serviceKey, subject: mcp.subjectToken });
    expect(answer.status).toBe(200);
    const client = await connectWithBearer(
      mcp.url,
      ((await answer.json()) as { access_token: string }).access_token,
    );
    try {
      expectDemoMenu((await client.listTools()).tools.map((t) => t.name));
    } finally {
      await client.close();
    }
  });

  it('runs the whole OAuth flow from outside with the MCP SDK client', async () => {
    const { url, mcp } = demoHost();
    const provider = new MemoryOAuthProvider('http://127.0.0.1:33418/callback');
    await expect(
      newClient().connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider })),
    ).rejects.toThrow(UnauthorizedError);
    expect(provider.information?.client_id).toMatch(/^mcp_client_/);

    const steps = await signInAndApprove(provider.authorizationUrl!, 'demo@example.com');
    expect(steps.signedOut.headers.get('location')).toMatch(new RegExp(`^${url}/login\\?return_to=`));
    expect(steps.signedIn.status).toBe(303);
    expect(steps.consent.response.status).toBe(200);
    expect(steps.approved.status).toBe(303);
    expect(steps.callback.searchParams.get('iss')).toBe(mcp.url);

    const transport = new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider });
    await transport.finishAuth(steps.callback.searchParams.get('code')!);
    const client = newClient();
    await client.connect(transport);
    try {
      expectDemoMenu((await client.listTools()).tools.map((t) => t.name));
      const listed = await client.callTool({ name: 'list_orders', arguments: {} });
      expect(listed.isError).toBeFalsy();
      expect(listed.structuredContent).toMatchObject({ orders: [{ id: 'A-1001' }, { id: 'A-1002' }] });
    } finally {
      await client.close();
    }
  });

  it('answers the door’s connect page', async () => {
    const { mcp } = demoHost();
    const page = await fetch(mcp.connect);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(mcp.url);
  });
});

/** demo@example.com signed in on the demo host as its sign-in page does: their apps and placements. */
async function demoScreen() {
  const { url } = demoHost();
  const login = await fetch(`${url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'demo@example.com' }),
  });
  const { token } = (await login.json()) as { token: string };
  const wire = async (path: string, init: RequestInit = {}) => {
    const answer = await fetch(`${url}/api/service${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(200);
    return answer.json();
  };
  const { apps } = (await wire('/apps')) as { apps: Array<{ id: string; name: string }> };
  const { placements } = (await wire('/apps/placements?page=/orders')) as {
    placements: Array<{ slot: string; appId: string }>;
  };
  return { apps, placements, wire };
}

/** The demo's four tools, in order, then the service's own apps tools, which no menu curates away. */
function expectDemoMenu(names: string[]): void {
  expect(names.filter((name) => !name.startsWith('service_'))).toEqual([
    'list_orders',
    'order_stats',
    'add_order_note',
    'cancel_order',
  ]);
  expect(names).toContain('service_make');
}
