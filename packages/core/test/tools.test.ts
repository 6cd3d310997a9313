/**
 * The tool catalog over a running platform: the admins' API (tools, releases from a manifest),
 * the public lists and their hiding rules, one tool's detail, usage framing and integration
 * requirements; shapes to the letter, exact error bodies, caches on a controlled clock and their
 * invalidation across instances, and the lists degrading to empty when the store is gone.
 *
 * @see docs/api/tools.md
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import type { Logger } from '../src/http/logger.js';
import { checkManifest } from '../src/schemas/manifest.js';
import { devSignIn, type RunningPlatform, signedInOwner, startPlatform } from './support/platform.js';
import { openMemoryStore, openTestStore, type TestStore } from './support/stores.js';

const ADMIN = 'tools-admin@example.test';
const HOUR = 60 * 60 * 1000;
let clock = Date.parse('2026-11-01T12:00:00Z');
const now = () => clock;

let store: TestStore;
let server: RunningPlatform;
let second: RunningPlatform;
let adminCookie: string;

const RESEARCH_MANIFEST = `name: research-desk
version: 1
runtime: node
integrations: [llm-gateway]
optional_integrations: [web-search]
wizard:
  inputs:
    - { key: DESK_NAME, label: Desk name, type: text, required: true }
    - { key: MAX_SOURCES, label: Sources per answer, type: number }
  steps:
    - id: connect
      title: Connect your services
      sections:
        - { type: integration, providers: [llm-gateway, web-search] }
    - id: configure
      title: Configure the desk
      sections:
        - { type: inputs, keys: [DESK_NAME, MAX_SOURCES] }
`;
const SIMPLE_MANIFEST = (name: string) =>
  `name: ${name}\nversion: 1\nruntime: node\nintegrations: [llm-gateway]\n`;

const get = (base: string, path: string, cookie = '') =>
  fetch(`${base}${path}`, { headers: cookie ? { cookie } : {} });
const adminSend = (method: string, path: string, body: unknown, base = server.url) =>
  fetch(`${base}${path}`, {
    method,
    headers: { cookie: adminCookie, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const json = async (response: Response) => ({ status: response.status, body: await response.json() });

async function createTool(fields: Record<string, unknown>) {
  const response = await adminSend('POST', '/api/admin/tools', fields);
  expect(response.status).toBe(201);
}
/** Publishes a release with something to run (`artifact: null` publishes a listing only). */
async function publish(
  slug: string,
  version: string,
  manifest: string,
  base = server.url,
  artifact: unknown = { type: 'directory', path: `/srv/tools/${slug}`, start: ['node', 'main.js'] },
) {
  const body = { version, manifest, ...(artifact ? { artifact } : {}) };
  return adminSend('POST', `/api/admin/tools/${slug}/releases`, body, base);
}

beforeAll(async () => {
  store = await openTestStore();
  const options = { now, adminEmails: [ADMIN] };
  server = await startPlatform(store, options);
  second = await startPlatform(store, options);
  for (const [provider, name, category] of [
    ['llm-gateway', 'LLM gateway', 'ai'],
    ['web-search', 'Web search', 'search'],
    ['speech', 'Speech', 'voice'],
  ] as const) {
    await store.db
      .insertInto('integrations')
      .values({
        provider,
        name,
        category,
        description: `${name} for tools`,
        logo_url: `${server.url}/static/integrations/${provider}.svg`,
        docs_url: `${server.url}/docs/integrations/${provider}`,
        default_profile: 'vendo_managed_pool',
        supported_profiles: JSON.stringify(['vendo_managed_pool']),
      })
      .execute();
  }
  adminCookie = await devSignIn(server, ADMIN);

  await createTool({
    slug: 'research-desk',
    name: 'Research desk',
    description: 'Answers with sources',
    category: 'research',
    sourceRepo: 'examples/research-desk',
  });
  expect((await publish('research-desk', '1.0.0', RESEARCH_MANIFEST)).status).toBe(201);
  await createTool({
    slug: 'notes',
    name: 'Notes',
    category: 'writing',
    iconUrl: 'https://cdn.example.test/n.svg',
  });
  expect((await publish('notes', '1', SIMPLE_MANIFEST('notes'))).status).toBe(201);
  await createTool({ slug: 'launch-board', name: 'Launch board', internal: true });
  expect((await publish('launch-board', '1', SIMPLE_MANIFEST('launch-board'))).status).toBe(201);
  await createTool({ slug: 'service-test-echo', name: 'Echo (test)' });
  expect((await publish('service-test-echo', '1', SIMPLE_MANIFEST('echo'))).status).toBe(201);
  await createTool({ slug: 'vendo-test-echo', name: 'Echo (contract test prefix)' });
  expect((await publish('vendo-test-echo', '1', SIMPLE_MANIFEST('echo'))).status).toBe(201);
  await createTool({ slug: 'retired', name: 'Retired', enabled: false });
  expect((await publish('retired', '1', SIMPLE_MANIFEST('retired'))).status).toBe(201);
  await createTool({ slug: 'draft-tool', name: 'Draft tool', category: 'research' });
}, 60_000);

afterAll(async () => {
  await second?.close();
  await server?.close();
  await store?.dispose();
});

describe('the admins’ tool API', () => {
  it('is for platform admins only: 401 signed out, 403 for other users', async () => {
    expect(await json(await get(server.url, '/api/admin/tools'))).toEqual({
      status: 401,
      body: { message: 'Unauthorized' },
    });
    const owner = await signedInOwner(server, 'not-admin@example.test');
    const refused = await fetch(`${server.url}/api/admin/tools`, {
      method: 'POST',
      headers: { cookie: owner.cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'sneaky', name: 'Sneaky' }),
    });
    expect(refused.status).toBe(403);
    expect((await get(server.url, '/api/tools/sneaky')).status).toBe(404);
  });

  it('lists every platform tool with its active release', async () => {
    const { status, body } = await json(await get(server.url, '/api/admin/tools', adminCookie));
    expect(status).toBe(200);
    expect(body.tools.map((tool: { slug: string }) => tool.slug)).toEqual([
      'draft-tool',
      'launch-board',
      'notes',
      'research-desk',
      'retired',
      'service-test-echo',
      'vendo-test-echo',
    ]);
  });

  it('refuses bad input with a clear 4xx', async () => {
    expect((await adminSend('POST', '/api/admin/tools', { slug: 'Bad Slug', name: 'x' })).status).toBe(400);
    expect((await adminSend('POST', '/api/admin/tools', { slug: 'notes', name: 'Again' })).status).toBe(409);
    // The lists' own paths: a tool of that slug would have no detail at /api/tools/{slug}.
    for (const slug of ['catalog', 'deployable']) {
      expect(
        await json(await adminSend('POST', '/api/admin/tools', { slug, name: 'Catalog' })),
      ).toMatchObject({
        status: 400,
        body: { message: 'slug: slug must not be catalog or deployable: those are the lists' },
      });
    }
    expect(
      (await adminSend('POST', '/api/admin/tools', { slug: 'long-one', name: 'x'.repeat(500) })).status,
    ).toBe(400);
    expect((await adminSend('PATCH', '/api/admin/tools/notes', { colour: 'blue' })).status).toBe(400);
    expect((await adminSend('PATCH', '/api/admin/tools/notes', {})).status).toBe(400);
    expect((await adminSend('PATCH', '/api/admin/tools/nope-nope', { enabled: false })).status).toBe(404);
    const malformed = await fetch(`${server.url}/api/admin/tools`, {
      method: 'POST',
      headers: { cookie: adminCookie, 'content-type': 'application/json' },
      body: '{"slug":',
    });
    expect(await json(malformed)).toMatchObject({
      status: 400,
      body: { message: 'Request body must be valid JSON' },
    });
    expect((await publish('research-desk', 'bad version!', RESEARCH_MANIFEST)).status).toBe(400);
    expect((await publish('no-such-tool', '1', SIMPLE_MANIFEST('x-tool'))).status).toBe(404);
    // A manifest past 60,000 characters, and a body past 128 KiB.
    expect((await publish('draft-tool', '1', `# ${'x'.repeat(70_000)}\n`)).status).toBe(400);
    expect((await publish('draft-tool', '1', `# ${'x'.repeat(200_000)}\n`)).status).toBe(413);
    expect((await get(server.url, '/api/tools/draft-tool')).status).toBe(200);
  });

  it('answers an invalid manifest with the very problems `service validate` lists', async () => {
    const bad = 'name: Bad\nversion: 2\nruntime: node\ncolour: blue\n';
    const checked = checkManifest(bad);
    expect(checked.ok).toBe(false);
    const { status, body } = await json(await publish('draft-tool', '1', bad));
    expect(status).toBe(400);
    expect(body).toEqual({
      message: 'The manifest is not valid',
      code: 'INVALID_MANIFEST',
      problems: checked.ok ? [] : checked.problems,
    });
  });

  it('refuses a manifest whose aliases would expand past the YAML limit, without expanding them', async () => {
    // Eight levels of nine aliases each: 43 million nodes once expanded.
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i <= 8; i++) {
      const name = `l${i}`;
      const previous = i === 1 ? 'a' : `l${i - 1}`;
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(', ')}]`);
    }
    const bomb = `name: draft\nversion: 1\nruntime: node\n${levels.join('\n')}\n`;
    const checked = checkManifest(bomb);
    expect(checked.ok).toBe(false);
    const { status, body } = await json(await publish('draft-tool', '1', bomb));
    expect(status).toBe(400);
    expect(body.code).toBe('INVALID_MANIFEST');
    expect(body.problems[0].message).toMatch(/^YAML: .*alias/i);
  });

  it('refuses a manifest naming an integration the catalog does not have', async () => {
    const { status, body } = await json(
      await publish(
        'draft-tool',
        '1',
        'name: draft\nversion: 1\nruntime: node\noptional_integrations: [fax]\n',
      ),
    );
    expect(status).toBe(400);
    expect(body.problems).toEqual([
      { path: 'optional_integrations[0]', message: 'fax is not an integration of the catalog' },
    ]);
  });

  it('supersedes the active release, refuses a duplicate version (409) and withdraws', async () => {
    await createTool({ slug: 'versioned', name: 'Versioned' });
    expect((await publish('versioned', '1', SIMPLE_MANIFEST('versioned'))).status).toBe(201);
    expect((await publish('versioned', '2', SIMPLE_MANIFEST('versioned'))).status).toBe(201);
    expect(await json(await publish('versioned', '2', SIMPLE_MANIFEST('versioned')))).toEqual({
      status: 409,
      body: { message: 'This tool already has a release of this version', code: 'RELEASE_EXISTS' },
    });
    const statuses = await store.db
      .selectFrom('tool_releases as r')
      .innerJoin('tools as t', 't.id', 'r.tool_id')
      .select(['r.version', 'r.status'])
      .where('t.slug', '=', 'versioned')
      .orderBy('r.version')
      .execute();
    expect(statuses).toEqual([
      { version: '1', status: 'superseded' },
      { version: '2', status: 'active' },
    ]);
    const withdrawn = await adminSend('POST', '/api/admin/tools/versioned/releases/2/withdraw', {});
    expect(withdrawn.status).toBe(200);
    expect((await withdrawn.json()).tool.release).toBeNull();
    expect((await adminSend('POST', '/api/admin/tools/versioned/releases/9/withdraw', {})).status).toBe(404);
  });

  it('stores a release’s artifact (what the deployer runs), refusing a relative path', async () => {
    await createTool({ slug: 'runnable', name: 'Runnable' });
    const artifact = { type: 'directory', path: '/srv/tools/runnable', start: ['node', 'main.js'] };
    const send = (version: string, given: unknown) =>
      adminSend('POST', '/api/admin/tools/runnable/releases', {
        version,
        manifest: SIMPLE_MANIFEST('runnable'),
        artifact: given,
      });
    expect((await send('1', artifact)).status).toBe(201);
    const bad = await send('2', { ...artifact, path: 'srv/tools' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toMatch(/artifact.path must be absolute/);
    const stored = await store.db
      .selectFrom('tool_releases as r')
      .innerJoin('tools as t', 't.id', 'r.tool_id')
      .select(['r.version', 'r.artifact'])
      .where('t.slug', '=', 'runnable')
      .execute();
    expect(stored).toEqual([{ version: '1', artifact }]);
  });

  it('leaves exactly one active release under concurrent publishes of one tool', async () => {
    await createTool({ slug: 'raced', name: 'Raced' });
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((version, index) =>
        publish(
          'raced',
          index < 3 ? version : 'same',
          SIMPLE_MANIFEST('raced'),
          index % 2 ? second.url : server.url,
        ),
      ),
    );
    const codes = answers.map((answer) => answer.status).sort();
    expect(codes).toEqual([201, 201, 201, 201, 409, 409]);
    const active = await store.db
      .selectFrom('tool_releases as r')
      .innerJoin('tools as t', 't.id', 'r.tool_id')
      .select('r.version')
      .where('t.slug', '=', 'raced')
      .where('r.status', '=', 'active')
      .execute();
    expect(active).toHaveLength(1);
  });
});

describe('GET /api/tools/catalog', () => {
  it('shows anyone the enabled platform tools, exactly slug, name, description and category', async () => {
    const { status, body } = await json(await get(server.url, '/api/tools/catalog'));
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['tools']);
    const notes = body.tools.find((tool: { slug: string }) => tool.slug === 'notes');
    expect(notes).toEqual({ slug: 'notes', name: 'Notes', description: '', category: 'writing' });
    for (const tool of body.tools)
      expect(Object.keys(tool).sort()).toEqual(['category', 'description', 'name', 'slug']);
    expect(body.tools.map((tool: { slug: string }) => tool.slug)).not.toContain('retired');
  });

  it('shows platform admins every tool, disabled ones included, uncached', async () => {
    const response = await get(server.url, '/api/tools/catalog', adminCookie);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const slugs = (await response.json()).tools.map((tool: { slug: string }) => tool.slug);
    expect(slugs).toContain('retired');
  });

  it('treats a stale session cookie as anonymous, never counting it as an attack', async () => {
    for (let i = 0; i < 30; i++) {
      const response = await get(server.url, '/api/tools/catalog', 'service_session=stale-value');
      expect(response.status).toBe(200);
    }
    const slugs = (await (await get(server.url, '/api/tools/catalog', 'service_session=x')).json()).tools.map(
      (tool: { slug: string }) => tool.slug,
    );
    expect(slugs).not.toContain('retired');
  });
});

describe('GET /api/tools/deployable', () => {
  it('lists enabled, public tools with an active release, in the deployable shape', async () => {
    const { status, body } = await json(await get(server.url, '/api/tools/deployable'));
    expect(status).toBe(200);
    const slugs = body.tools.map((tool: { toolSlug: string }) => tool.toolSlug);
    expect(slugs).toContain('research-desk');
    expect(slugs).toContain('notes');
    // No active release, internal, test prefix, disabled: not for the public.
    for (const hidden of [
      'draft-tool',
      'launch-board',
      'service-test-echo',
      'vendo-test-echo',
      'retired',
      'versioned',
    ]) {
      expect(slugs).not.toContain(hidden);
    }
    const desk = body.tools.find((tool: { toolSlug: string }) => tool.toolSlug === 'research-desk');
    expect(desk).toEqual({
      toolSlug: 'research-desk',
      toolName: 'Research desk',
      description: 'Answers with sources',
      iconUrl: `${server.url.replace(/\/$/, '')}/static/tools/research-desk.svg`.replace(
        server.url,
        server.platform.context.baseUrl,
      ),
      authMode: 'session',
      sourceRepo: 'examples/research-desk',
      version: '1.0.0',
      wizardInputs: [
        { key: 'DESK_NAME', label: 'Desk name', type: 'text', required: true },
        { key: 'MAX_SOURCES', label: 'Sources per answer', type: 'number', required: false },
      ],
      wizardLayout: {
        version: 1,
        subSteps: [
          {
            id: 'connect',
            title: 'Connect your services',
            sections: [{ type: 'integration', providers: ['llm-gateway', 'web-search'] }],
          },
          {
            id: 'configure',
            title: 'Configure the desk',
            sections: [{ type: 'inputs', keys: ['DESK_NAME', 'MAX_SOURCES'] }],
          },
        ],
      },
    });
    const notes = body.tools.find((tool: { toolSlug: string }) => tool.toolSlug === 'notes');
    expect(notes).toMatchObject({
      iconUrl: 'https://cdn.example.test/n.svg',
      wizardInputs: [],
      wizardLayout: null,
    });
  });

  it('shows admins internal, test-prefixed and disabled tools, still only those with an active release', async () => {
    const { body } = await json(await get(server.url, '/api/tools/deployable', adminCookie));
    const slugs = body.tools.map((tool: { toolSlug: string }) => tool.toolSlug);
    for (const shown of ['launch-board', 'service-test-echo', 'vendo-test-echo', 'retired', 'research-desk'])
      expect(slugs).toContain(shown);
    expect(slugs).not.toContain('draft-tool');
  });

  it('leaves out a tool whose active release has nothing this platform can run, as the deploy refuses it', async () => {
    await createTool({ slug: 'listing-only', name: 'Listing only' });
    expect(
      (await publish('listing-only', '1', SIMPLE_MANIFEST('listing-only'), server.url, null)).status,
    ).toBe(201);
    for (const cookie of ['', adminCookie]) {
      const { body } = await json(await get(server.url, '/api/tools/deployable', cookie));
      expect(body.tools.map((tool: { toolSlug: string }) => tool.toolSlug)).not.toContain('listing-only');
    }
    const owner = await signedInOwner(server, 'listing-only@example.test');
    await post(store.db, {
      tenantId: owner.tenantId,
      amountMicros: 5_000_000,
      kind: 'grant',
      idempotencyKey: 'listing-only',
    });
    const deploy = await fetch(`${server.url}/api/deploy`, {
      method: 'POST',
      headers: { cookie: owner.cookie, origin: server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ toolSlug: 'listing-only', slug: 'listing-only' }),
    });
    expect(deploy.status).toBe(409);
    expect((await deploy.json()).code).toBe('RELEASE_NOT_RUNNABLE');
    // A release that names what to run replaces it, and the tool is offered.
    expect((await publish('listing-only', '2', SIMPLE_MANIFEST('listing-only'))).status).toBe(201);
    const { body } = await json(await get(server.url, '/api/tools/deployable'));
    expect(body.tools.map((tool: { toolSlug: string }) => tool.toolSlug)).toContain('listing-only');
  });

  it('hides the configured prefix instead of the default one', async () => {
    const own = await startPlatform(store, { env: { SERVICE_HIDDEN_TOOL_PREFIX: 'notes' } });
    try {
      const slugs = (await (await get(own.url, '/api/tools/deployable')).json()).tools.map(
        (tool: { toolSlug: string }) => tool.toolSlug,
      );
      expect(slugs).toContain('service-test-echo');
      expect(slugs).not.toContain('notes');
    } finally {
      await own.close();
    }
  });

  it('reads an invalid stored wizard layout as null', async () => {
    await createTool({ slug: 'broken-layout', name: 'Broken layout' });
    expect((await publish('broken-layout', '1', SIMPLE_MANIFEST('broken-layout'))).status).toBe(201);
    await store.db
      .updateTable('tool_releases')
      .set({ wizard_layout: JSON.stringify({ version: 1, subSteps: [{ id: 1, sections: 'nope' }] }) })
      .where('tool_id', '=', (eb) => eb.selectFrom('tools').select('id').where('slug', '=', 'broken-layout'))
      .execute();
    const { body } = await json(await get(server.url, '/api/tools/deployable', adminCookie));
    const tool = body.tools.find((entry: { toolSlug: string }) => entry.toolSlug === 'broken-layout');
    expect(tool.wizardLayout).toBeNull();
    const detail = await json(await get(server.url, '/api/tools/broken-layout'));
    expect(detail.body.tool.release.wizardLayout).toBeNull();
  });
});

describe('GET /api/tools/{slug}', () => {
  it('answers the tool row with its active release joined', async () => {
    const { status, body } = await json(await get(server.url, '/api/tools/research-desk'));
    expect(status).toBe(200);
    expect(body.tool).toEqual({
      id: expect.any(String),
      slug: 'research-desk',
      name: 'Research desk',
      description: 'Answers with sources',
      category: 'research',
      iconUrl: `${server.platform.context.baseUrl}/static/tools/research-desk.svg`,
      authMode: 'session',
      sourceRepo: 'examples/research-desk',
      enabled: true,
      internal: false,
      surfaceAllConnections: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      release: {
        id: expect.any(String),
        version: '1.0.0',
        status: 'active',
        publishedAt: expect.any(String),
        requiredIntegrations: ['llm-gateway'],
        optionalIntegrations: ['web-search'],
        wizardInputs: expect.any(Array),
        wizardLayout: expect.objectContaining({ version: 1 }),
      },
    });
  });

  it('answers 404 { error: "Tool not found" } for unknown, malformed, oversized and (for non-admins) disabled slugs', async () => {
    for (const slug of ['no-such-tool', 'Bad_Slug', 'x'.repeat(300), 'retired']) {
      expect(await json(await get(server.url, `/api/tools/${slug}`))).toEqual({
        status: 404,
        body: { error: 'Tool not found' },
      });
    }
    expect((await get(server.url, '/api/tools/retired', adminCookie)).status).toBe(200);
    // The platform's input guard refuses a NUL before any route, in the route's shape.
    expect(await json(await get(server.url, '/api/tools/%00'))).toEqual({
      status: 400,
      body: { error: 'Invalid request: path contains a NUL character' },
    });
  });
});

describe('GET /api/tools/{slug}/usage-framing', () => {
  it('labels the presets from the tool’s spend over the last 30 days', async () => {
    const owner = await signedInOwner(server, 'framing-owner@example.test');
    const tool = await store.db
      .selectFrom('tools')
      .select('id')
      .where('slug', '=', 'research-desk')
      .executeTakeFirstOrThrow();
    await store.db.updateTable('apps').set({ tool_id: tool.id }).where('id', '=', owner.appId).execute();
    await post(store.db, {
      tenantId: owner.tenantId,
      amountMicros: 1_000_000,
      kind: 'grant',
      idempotencyKey: 'framing',
    });
    for (const [cost, ageDays] of [
      [3_000, 1],
      [5_000, 2],
      [900_000, 45], // older than 30 days: not counted
    ] as const) {
      const entry = await post(store.db, {
        tenantId: owner.tenantId,
        amountMicros: -cost,
        kind: 'usage',
        idempotencyKey: `framing-${cost}`,
      });
      await store.db
        .insertInto('usage_events')
        .values({
          id: randomUUID(),
          tenant_id: owner.tenantId,
          app_id: owner.appId,
          provider: 'llm-gateway',
          quantities: JSON.stringify({ call: 1 }),
          cost_micros: cost,
          ledger_entry_id: entry.entryId,
          created_at: new Date(clock - ageDays * 24 * HOUR),
        })
        .execute();
    }
    const { status, body } = await json(await get(server.url, '/api/tools/research-desk/usage-framing'));
    expect(status).toBe(200);
    // USD 0.004 a call on average.
    expect(body).toEqual({
      amounts: [
        { usd: 5, label: 'About 1,300 calls', cold_start: false },
        { usd: 25, label: 'About 6,300 calls', cold_start: false },
        { usd: 100, label: 'About 25,000 calls', cold_start: false },
      ],
    });
  });

  it('flags a tool without history as cold_start, estimated from its category', async () => {
    // draft-tool shares research-desk's category: its average stands in.
    const draft = await json(await get(server.url, '/api/tools/draft-tool/usage-framing'));
    expect(draft.body.amounts).toEqual([
      { usd: 5, label: 'About 1,300 calls', cold_start: true },
      { usd: 25, label: 'About 6,300 calls', cold_start: true },
      { usd: 100, label: 'About 25,000 calls', cold_start: true },
    ]);
    // notes' category has no history at all: a typical USD 0.002 call.
    const notes = await json(await get(server.url, '/api/tools/notes/usage-framing'));
    expect(notes.body.amounts).toEqual([
      { usd: 5, label: 'About 2,500 calls', cold_start: true },
      { usd: 25, label: 'About 13,000 calls', cold_start: true },
      { usd: 100, label: 'About 50,000 calls', cold_start: true },
    ]);
  });

  it('answers 404 { error: "tool_not_found" } for an unknown slug', async () => {
    for (const slug of ['no-such-tool', 'UPPER', 'retired']) {
      expect(await json(await get(server.url, `/api/tools/${slug}/usage-framing`))).toEqual({
        status: 404,
        body: { error: 'tool_not_found' },
      });
    }
  });
});

describe('GET /api/tools/{slug}/integrations', () => {
  const entryKeys = [
    'alreadyEnabled',
    'category',
    'defaultProfile',
    'description',
    'iconName',
    'integrationId',
    'logoUrl',
    'name',
    'provider',
    'supportedProfiles',
  ];

  it('lists the release’s required and optional integrations; anonymous callers have none enabled', async () => {
    const { status, body } = await json(await get(server.url, '/api/tools/research-desk/integrations'));
    expect(status).toBe(200);
    expect(body.required).toEqual([
      {
        integrationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        provider: 'llm-gateway',
        name: 'LLM gateway',
        description: 'LLM gateway for tools',
        iconName: null,
        logoUrl: `${server.url}/static/integrations/llm-gateway.svg`,
        category: 'ai',
        defaultProfile: 'vendo_managed_pool',
        supportedProfiles: ['vendo_managed_pool'],
        alreadyEnabled: false,
      },
    ]);
    expect(body.optional.map((entry: { provider: string }) => entry.provider)).toEqual(['web-search']);
    expect(Object.keys(body.optional[0]).sort()).toEqual(entryKeys);
  });

  it('answers 200 with nothing for an unknown slug', async () => {
    for (const slug of ['no-such-tool', 'BAD', 'x'.repeat(200)]) {
      expect(await json(await get(server.url, `/api/tools/${slug}/integrations`))).toEqual({
        status: 200,
        body: { required: [], optional: [] },
      });
    }
  });

  it('refuses an appId that is not a UUID', async () => {
    expect(await json(await get(server.url, '/api/tools/research-desk/integrations?appId=12'))).toEqual({
      status: 400,
      body: { message: 'appId must be a UUID' },
    });
  });

  it('marks alreadyEnabled from the workspace’s integrations, or from the app’s bindings, never another workspace’s', async () => {
    const owner = await signedInOwner(server, 'bindings-owner@example.test');
    const other = await signedInOwner(server, 'bindings-other@example.test');
    const connection = await store.db
      .insertInto('connections')
      .values({
        tenant_id: owner.tenantId,
        provider: 'web-search',
        profile: 'vendo_managed_pool',
        status: 'connected',
        display_name: 'Search',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const enabledOf = (body: {
      required: Array<{ provider: string; alreadyEnabled: boolean }>;
      optional: typeof body.required;
    }) =>
      Object.fromEntries(
        [...body.required, ...body.optional].map((entry) => [entry.provider, entry.alreadyEnabled]),
      );

    // The workspace: web-search is connected.
    let answer = await json(await get(server.url, '/api/tools/research-desk/integrations', owner.cookie));
    expect(enabledOf(answer.body)).toEqual({ 'llm-gateway': false, 'web-search': true });
    // The app: nothing bound yet, then web-search bound.
    const path = `/api/tools/research-desk/integrations?appId=${owner.appId}`;
    answer = await json(await get(server.url, path, owner.cookie));
    expect(enabledOf(answer.body)).toEqual({ 'llm-gateway': false, 'web-search': false });
    await store.db
      .insertInto('app_connections')
      .values({ app_id: owner.appId, connection_id: connection.id, tenant_id: owner.tenantId })
      .execute();
    answer = await json(await get(server.url, path, owner.cookie));
    expect(enabledOf(answer.body)).toEqual({ 'llm-gateway': false, 'web-search': true });
    // Another workspace naming this app learns nothing; neither does a signed-out caller.
    answer = await json(await get(server.url, path, other.cookie));
    expect(enabledOf(answer.body)).toEqual({ 'llm-gateway': false, 'web-search': false });
    answer = await json(await get(server.url, path));
    expect(enabledOf(answer.body)).toEqual({ 'llm-gateway': false, 'web-search': false });
  });

  it('lists every enabled integration as optional for a tool that surfaces all connections', async () => {
    const patched = await adminSend('PATCH', '/api/admin/tools/notes', { surfaceAllConnections: true });
    expect(patched.status).toBe(200);
    const { body } = await json(await get(server.url, '/api/tools/notes/integrations'));
    expect(body.required.map((entry: { provider: string }) => entry.provider)).toEqual(['llm-gateway']);
    expect(body.optional.map((entry: { provider: string }) => entry.provider)).toEqual([
      'speech',
      'web-search',
    ]);
  });

  it('gives an integration that names no logo the platform’s one, the same as /api/integrations, and it resolves', async () => {
    await store.db
      .insertInto('integrations')
      .values({
        provider: 'transcribe',
        name: 'Transcribe',
        category: 'voice',
        description: 'Speech to text',
        logo_url: '',
        docs_url: '',
        default_profile: 'vendo_managed_pool',
        supported_profiles: JSON.stringify(['vendo_managed_pool']),
      })
      .execute();
    await createTool({ slug: 'minutes', name: 'Minutes', category: 'writing' });
    const manifest = 'name: minutes\nversion: 1\nruntime: node\nintegrations: [transcribe]\n';
    expect((await publish('minutes', '1', manifest)).status).toBe(201);

    const { body } = await json(await get(server.url, '/api/tools/minutes/integrations'));
    expect(body.required.map((entry: { provider: string }) => entry.provider)).toEqual(['transcribe']);
    const { logoUrl } = body.required[0];
    expect(logoUrl).toBe(`${server.platform.context.baseUrl}/static/integrations/transcribe.svg`);
    const listed = (await (await get(server.url, '/api/integrations')).json()).integrations.find(
      (row: { provider: string }) => row.provider === 'transcribe',
    );
    expect(listed.logo_url).toBe(logoUrl);
    // This platform's base URL is not where it listens: the path is what must resolve.
    const logo = await fetch(`${server.url}${new URL(logoUrl).pathname}`);
    expect(logo.status).toBe(200);
    expect(logo.headers.get('content-type')).toContain('image/svg+xml');
    expect(await logo.text()).toContain('<svg');
  });
});

describe('caches', () => {
  const catalogSlugs = async (base: string) =>
    (await (await get(base, '/api/tools/catalog')).json()).tools.map((tool: { slug: string }) => tool.slug);
  const deployableSlugs = async (base: string) =>
    (await (await get(base, '/api/tools/deployable')).json()).tools.map(
      (tool: { toolSlug: string }) => tool.toolSlug,
    );

  it('serves the public catalog for an hour when the store changes behind its back', async () => {
    await catalogSlugs(server.url);
    // A write that sends no notice: only the lifetime ends it.
    await store.db.updateTable('tools').set({ name: 'Notes, renamed' }).where('slug', '=', 'notes').execute();
    const name = async () =>
      (await (await get(server.url, '/api/tools/catalog')).json()).tools.find(
        (tool: { slug: string }) => tool.slug === 'notes',
      ).name;
    expect(await name()).toBe('Notes');
    clock += HOUR - 1;
    expect(await name()).toBe('Notes');
    clock += 2;
    expect(await name()).toBe('Notes, renamed');
  });

  it('serves the public deployable list for five minutes', async () => {
    const name = async () =>
      (await (await get(second.url, '/api/tools/deployable')).json()).tools.find(
        (tool: { toolSlug: string }) => tool.toolSlug === 'notes',
      ).toolName;
    const before = await name();
    await store.db.updateTable('tools').set({ name: 'Notes, again' }).where('slug', '=', 'notes').execute();
    clock += 5 * 60 * 1000 - 1;
    expect(await name()).toBe(before);
    clock += 2;
    expect(await name()).toBe('Notes, again');
  });

  it('serves usage framing for an hour', async () => {
    const label = async () =>
      (await (await get(server.url, '/api/tools/notes/usage-framing')).json()).amounts[0].label;
    const before = await label();
    await store.db.updateTable('tools').set({ category: 'research' }).where('slug', '=', 'notes').execute();
    clock += HOUR - 1;
    expect(await label()).toBe(before);
    clock += 2;
    expect(await label()).not.toBe(before);
  });

  it('drops every instance’s lists as soon as an admin disables a tool', async () => {
    expect(await catalogSlugs(server.url)).toContain('research-desk');
    expect(await deployableSlugs(second.url)).toContain('research-desk');
    expect(
      (await adminSend('PATCH', '/api/admin/tools/research-desk', { enabled: false }, second.url)).status,
    ).toBe(200);
    await expect.poll(() => catalogSlugs(server.url), { timeout: 5000 }).not.toContain('research-desk');
    await expect.poll(() => deployableSlugs(server.url), { timeout: 5000 }).not.toContain('research-desk');
    expect(await catalogSlugs(second.url)).not.toContain('research-desk');
    expect((await adminSend('PATCH', '/api/admin/tools/research-desk', { enabled: true })).status).toBe(200);
    await expect.poll(() => deployableSlugs(second.url), { timeout: 5000 }).toContain('research-desk');
  });

  it('keeps no list or framing read while a change notice was heard: it may predate the change', async () => {
    const tools = server.platform.context.tools;
    clock += HOUR; // past every cache
    // Reads under way as the notice of an admin's change is heard...
    const reads = Promise.all([
      tools.catalog({ admin: false }),
      tools.deployable({ admin: false }),
      tools.usageFraming('notes'),
    ]);
    tools.forget();
    await reads;
    // ...may have read the store before the change committed (here: after them, without a notice).
    await store.db.updateTable('tools').set({ name: 'Notes, changed' }).where('slug', '=', 'notes').execute();
    const named = (list: Array<{ name?: string; toolName?: string }>) =>
      list.map((tool) => tool.name ?? tool.toolName);
    expect(named((await (await get(server.url, '/api/tools/catalog')).json()).tools)).toContain(
      'Notes, changed',
    );
    expect(named((await (await get(server.url, '/api/tools/deployable')).json()).tools)).toContain(
      'Notes, changed',
    );
    await store.db.updateTable('tools').set({ enabled: false }).where('slug', '=', 'notes').execute();
    expect((await get(server.url, '/api/tools/notes/usage-framing')).status).toBe(404);
    await store.db
      .updateTable('tools')
      .set({ name: 'Notes', enabled: true })
      .where('slug', '=', 'notes')
      .execute();
    tools.forget();
  });

  it('drops the deployable list when a release is published on another instance', async () => {
    expect(await deployableSlugs(server.url)).not.toContain('draft-tool');
    expect((await publish('draft-tool', '1', SIMPLE_MANIFEST('draft-tool'), second.url)).status).toBe(201);
    await expect.poll(() => deployableSlugs(server.url), { timeout: 5000 }).toContain('draft-tool');
  });
});

describe('a store that is gone', () => {
  it('leaves the lists answering 200 { tools: [] }, never 5xx', async () => {
    const lost = await openMemoryStore();
    const logged: string[] = [];
    const record = (level: string) => (message: string) => void logged.push(`${level} ${message}`);
    const lonely = await startPlatform(lost, {
      logger: { info: record('info'), warn: record('warn'), error: record('error') } satisfies Logger,
    });
    await lost.close();
    try {
      for (const list of ['catalog', 'deployable']) {
        const response = await get(lonely.url, `/api/tools/${list}`);
        expect(await json(response)).toEqual({ status: 200, body: { tools: [] } });
      }
      expect(logged.filter((line) => line.startsWith('error tool '))).toEqual([
        'error tool catalog list failed',
        'error tool deployable list failed',
      ]);
      // The detail has no empty answer to fall back on: the API contract's fault body.
      expect(await json(await get(lonely.url, '/api/tools/notes'))).toEqual({
        status: 500,
        body: { error: 'Internal error' },
      });
    } finally {
      await lonely.close().catch(() => {});
    }
  });
});
