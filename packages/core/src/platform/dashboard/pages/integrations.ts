import { html, type SafeHtml } from '../../../http/html.js';
import { chart } from '../charts.js';
import { onceInput, oncePerForm } from '../form-once.js';
import { money, when } from '../format.js';
import {
  type ActionResult,
  type DashboardPage,
  field,
  fromAnswer,
  input,
  NAME_MAX,
  nameRefusal,
  type PageAction,
  type PageView,
  table,
} from '../page.js';
import { newKeyBlock } from './keys.js';

interface IntegrationRow {
  provider: string;
  name: string;
  description: string | null;
  category: string | null;
  enabled: boolean;
  supported_profiles: string[];
  default_profile: string;
  logo_url: string | null;
  docs_url: string | null;
  tenantEnabled: boolean;
  provisioned: boolean;
  usageThisMonth: number;
  costThisMonth: number;
}

interface Connection {
  id: string;
  provider: string;
  profile: string;
  display_name: string;
  status: string;
}

interface ConnectionKey {
  id: string;
  name: string | null;
  prefix: string;
  user_id: string | null;
  created_at: string;
  last_used_at: string | null;
}

interface Usage {
  dailyTrend: { date: string; events: number; cost: number }[];
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** The connections API's limits: a connection's name, and a key given for the own-key profile. */
const CONNECTION_NAME_MAX = 200;
const API_KEY_MAX = 4096;

/** The answer to a Connection Key form sent again (its answer reloaded): nothing was created. */
const CONNECTION_KEY_SENT_AGAIN =
  'This Connection Key was already created and shown once; it is not shown again and no other key was created. If you did not copy it, revoke it below and create another.';

/** How a connection reaches the provider, in words. */
const PROFILE_LABELS: Record<string, string> = {
  vendo_managed_pool: 'managed pool',
  byok_static: 'own key',
  user_oauth: 'signed in',
};

async function connectionsOf(view: PageView): Promise<Connection[]> {
  const answer = await view.api.get<{ connections: Connection[] }>('/api/connections');
  return answer.ok ? answer.body.connections : [];
}

/** One integration: its switch, its connections (status live) and the ways to connect it. */
function integrationBlock(
  view: PageView,
  row: IntegrationRow,
  connections: Connection[],
  heading: 'h2' | 'none',
): SafeHtml {
  const mine = connections.filter((c) => c.provider === row.provider && c.status !== 'revoked');
  const canAct = view.user!.role !== 'viewer';
  const profiles = row.supported_profiles;
  const list =
    mine.length === 0
      ? html`<p class="muted" id="status-${row.provider}">This workspace has no connection to ${row.provider} yet.</p>`
      : html`<ul class="connections">${mine.map(
          (
            c,
          ) => html`<li data-connection-id="${c.id}"><strong>${c.display_name}</strong> · ${PROFILE_LABELS[c.profile] ?? c.profile} · <span class="status" data-live="connection-status" data-status="${c.status}">${c.status.replace(/_/g, ' ')}</span>
${canAct ? view.form('disconnect', html`<input type="hidden" name="id" value="${c.id}">`, { submit: 'Disconnect', buttonClass: 'danger', confirm: `Disconnect ${c.display_name}? Apps bound to it lose access.`, label: `Disconnect ${c.display_name}` }) : null}</li>`,
        )}</ul>`;
  const ways: SafeHtml[] = [];
  if (canAct && profiles.includes('user_oauth')) {
    ways.push(
      view.form('oauth', html`<input type="hidden" name="provider" value="${row.provider}">`, {
        submit: `Connect ${row.name} account`,
        label: `Connect ${row.name} by signing in`,
      }),
    );
  }
  if (canAct && profiles.includes('vendo_managed_pool')) {
    ways.push(
      view.form('managed', html`<input type="hidden" name="provider" value="${row.provider}">`, {
        submit: 'Use the managed pool',
        buttonClass: 'secondary',
        label: `Use ${row.name} through the managed pool`,
      }),
    );
  }
  if (canAct && profiles.includes('byok_static')) {
    ways.push(
      view.form(
        'key',
        html`<input type="hidden" name="provider" value="${row.provider}">${input(`key-${row.provider}`, `Your ${row.name} API key`, { name: 'api_key', type: 'password', required: true, maxlength: API_KEY_MAX })}${input(`key-name-${row.provider}`, 'Name', { name: 'display_name', placeholder: 'Team key', maxlength: CONNECTION_NAME_MAX })}`,
        { submit: 'Connect with key', label: `Connect ${row.name} with your own key` },
      ),
    );
  }
  const title = html`<img src="${row.logo_url ?? ''}" alt="" width="24" height="24"> ${row.name}`;
  return html`<article class="card integration" aria-labelledby="int-${row.provider}">
${heading === 'h2' ? html`<h2 id="int-${row.provider}"><a href="${view.base}/integrations/${row.provider}">${title}</a></h2>` : html`<p id="int-${row.provider}" class="muted">${row.category ?? ''}</p>`}
<p>${row.description ?? ''}</p>
<p>${row.tenantEnabled ? 'On for this workspace' : 'Off for this workspace'} · this month ${row.usageThisMonth} calls, ${money(row.costThisMonth)}</p>
${canAct ? view.form(row.tenantEnabled ? 'disable' : 'enable', html`<input type="hidden" name="provider" value="${row.provider}">`, { submit: row.tenantEnabled ? 'Turn off' : 'Turn on', buttonClass: 'secondary', label: `${row.tenantEnabled ? 'Turn off' : 'Turn on'} ${row.name}` }) : null}
${list}
${ways.length ? html`<details><summary>Connect ${row.name}</summary>${ways}</details>` : null}
</article>`;
}

/** The workspace's switch of the integration the form names. */
function switchAction(enabled: boolean, done: string): PageAction {
  return {
    done,
    run: withIntegration(async (view, _fields, provider) =>
      fromAnswer(
        await view.api.send('POST', `/api/integrations/${encodeURIComponent(provider)}`, {
          enabled,
        }),
      ),
    ),
  };
}

/** The pages' forms name an integration by its slug; anything else (a form edited) is none. */
const INTEGRATION_SLUG = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const NO_SUCH_INTEGRATION = { refused: 'No such integration.', status: 404 } as const;

/**
 * The form's integration, checked before it reaches the API, so a refusal is said in the page's
 * words rather than the API's field paths.
 */
function withIntegration(
  run: (view: PageView, fields: Record<string, string>, provider: string) => Promise<ActionResult>,
): PageAction['run'] {
  return (view, fields) => {
    const provider = field(fields, 'provider');
    return INTEGRATION_SLUG.test(provider)
      ? run(view, fields, provider)
      : Promise.resolve(NO_SUCH_INTEGRATION);
  };
}

const actions: DashboardPage['actions'] = {
  enable: switchAction(true, 'Integration turned on.'),
  disable: switchAction(false, 'Integration turned off.'),
  managed: {
    done: 'Connected through the managed pool.',
    run: withIntegration(async (view, _fields, provider) =>
      fromAnswer(await view.api.send('POST', '/api/connections', { provider })),
    ),
  },
  key: {
    done: 'Connected with your key.',
    run: withIntegration(async (view, fields, provider) => {
      const name = field(fields, 'display_name').trim();
      const apiKey = field(fields, 'api_key');
      const refusal =
        apiKey === ''
          ? 'Enter the API key to connect with.'
          : apiKey.length > API_KEY_MAX
            ? `The API key is too long (at most ${API_KEY_MAX} characters).`
            : name === ''
              ? null
              : nameRefusal("The connection's name", name, CONNECTION_NAME_MAX);
      if (refusal) return { refused: refusal };
      return fromAnswer(
        await view.api.send('POST', '/api/connections', {
          provider,
          profile: 'byok_static',
          credential: { api_key: apiKey },
          ...(name ? { display_name: name } : {}),
        }),
      );
    }),
  },
  oauth: {
    done: 'Connected.',
    run: withIntegration(async (view, _fields, provider) => {
      const answer = await view.api.send<{ authorizeUrl: string }>(
        'POST',
        `/api/oauth/${encodeURIComponent(provider)}/start`,
        {
          returnTo: `${view.base}/integrations/${provider}`,
        },
      );
      return answer.ok ? { redirect: answer.body.authorizeUrl } : fromAnswer(answer);
    }),
  },
  mintKey: {
    done: 'Connection Key created.',
    async run(view, fields) {
      const name = field(fields, 'name').trim();
      const refusal = name === '' ? null : nameRefusal("The Connection Key's name", name);
      if (refusal) return { refused: refusal };
      // Sent again (a reload of its answer), the form would mint another key.
      return oncePerForm(view, fields, '/integrations mintKey', CONNECTION_KEY_SENT_AGAIN, async () => {
        const answer = await view.api.send<{ key: string }>(
          'POST',
          `/api/connections/${encodeURIComponent(field(fields, 'id'))}/keys`,
          name ? { name } : {},
        );
        return answer.ok
          ? { show: newKeyBlock('Your new Connection Key.', answer.body.key) }
          : fromAnswer(answer);
      });
    },
  },
  revokeKey: {
    done: 'Connection Key revoked.',
    run: async (view, fields) =>
      fromAnswer(
        await view.api.send(
          'DELETE',
          `/api/connections/${encodeURIComponent(field(fields, 'connection'))}/keys/${encodeURIComponent(field(fields, 'id'))}`,
        ),
      ),
  },
  disconnect: {
    done: 'Disconnected.',
    run: async (view, fields) =>
      fromAnswer(
        await view.api.send('DELETE', `/api/connections/${encodeURIComponent(field(fields, 'id'))}`),
      ),
  },
};

/**
 * Integrations: the catalog with the workspace's switch of each, its connections (their status
 * follows the live stream) and the ways to connect: the managed pool, the person's own key, or
 * signing in to the provider (connector OAuth). Owners and members act; viewers look.
 */
export const integrationsPage: DashboardPage = {
  path: '/integrations',
  nav: 'integrations',
  title: () => 'Integrations',
  async render(view) {
    const [rows, connections] = await Promise.all([
      view.api.get<IntegrationRow[]>('/api/integrations'),
      connectionsOf(view),
    ]);
    const list = rows.ok && Array.isArray(rows.body) ? rows.body.filter((row) => row.enabled) : [];
    if (list.length === 0) return html`<p class="muted">The platform offers no integrations yet.</p>`;
    return html`<div class="grid">${list.map((row) => integrationBlock(view, row, connections, 'h2'))}</div>`;
  },
  actions,
};

/**
 * One integration (where a `not_connected` refusal's `connect_url` points): its connections and
 * how to connect it, and for owners its usage over 30 days.
 */
export const integrationPage: DashboardPage = {
  path: '/integrations/:slug',
  nav: 'integrations',
  async title(view) {
    const row = await rowOf(view);
    return row?.name ?? 'Integration';
  },
  async render(view) {
    const row = await rowOf(view);
    if (!row) return { status: 404, message: `There is no integration named ${view.params.slug ?? ''}.` };
    const connections = await connectionsOf(view);
    const usage =
      view.user!.role === 'owner'
        ? await view.api.get<Usage>(`/api/integrations/${row.provider}/usage`)
        : null;
    const days = usage?.ok ? usage.body.dailyTrend : [];
    return html`${integrationBlock(view, row, connections, 'none')}
${await connectionKeysBlock(
  view,
  connections.filter((c) => c.provider === row.provider && c.status !== 'revoked'),
)}
${days.length ? chart('integration-usage', { title: `${row.name}: spend per day, last 30 days`, x: days.map((d) => d.date), series: [{ label: row.name, values: days.map((d) => d.cost) }], unit: 'usd_micros', kind: 'bars' }) : null}
<details><summary>Connect from a script</summary><pre><code>curl -X POST ${view.ctx.baseUrl}/api/connections -H 'content-type: application/json' -b &lt;session&gt; -d '{"provider":"${row.provider}"}'</code></pre></details>`;
  },
  actions,
};

/**
 * The live Connection Keys of the integration's connections (each spends the workspace's credit
 * through its connection), with the member who minted each: owners and members revoke them and
 * mint new ones; a member's keys are revoked when they leave the workspace.
 */
async function connectionKeysBlock(view: PageView, connections: Connection[]): Promise<SafeHtml | null> {
  if (connections.length === 0) return null;
  const canAct = view.user!.role !== 'viewer';
  const [members, ...keyLists] = await Promise.all([
    view.api.get<{ members: Array<{ userId: string; email: string }> }>('/api/tenants/me/members'),
    ...connections.map((c) =>
      view.api.get<{ keys: ConnectionKey[] }>(`/api/connections/${encodeURIComponent(c.id)}/keys`),
    ),
  ]);
  const emailOf = new Map((members.ok ? members.body.members : []).map((m) => [m.userId, m.email]));
  const rows = connections.flatMap((c, i) => {
    const answer = keyLists[i]!;
    return (answer.ok ? answer.body.keys : []).map((key) => [
      key.name ?? html`<span class="muted">unnamed</span>`,
      c.display_name,
      html`<code>${key.prefix}…</code>`,
      key.user_id ? (emailOf.get(key.user_id) ?? 'a former member') : '',
      when(key.created_at),
      key.last_used_at ? when(key.last_used_at) : 'never',
      canAct
        ? view.form(
            'revokeKey',
            html`<input type="hidden" name="connection" value="${c.id}"><input type="hidden" name="id" value="${key.id}">`,
            {
              submit: 'Revoke',
              buttonClass: 'danger',
              confirm: 'Revoke this Connection Key? Anything using it stops working at once.',
              label: `Revoke ${key.name ?? key.prefix}`,
            },
          )
        : '',
    ]);
  });
  const mint = canAct
    ? view.form(
        'mintKey',
        html`${onceInput()}<label for="connection-key-connection">Connection</label><select id="connection-key-connection" name="id">${connections.map((c) => html`<option value="${c.id}">${c.display_name}</option>`)}</select>
${input('connection-key-name', 'Name', { name: 'name', placeholder: 'worker', maxlength: NAME_MAX })}`,
        { submit: 'Create Connection Key', label: 'New Connection Key' },
      )
    : null;
  return html`<section aria-labelledby="connection-keys-title"><h2 id="connection-keys-title">Connection Keys</h2>
${table('Connection Keys', ['Name', 'Connection', 'Starts with', 'Minted by', 'Created', 'Last used', 'Actions'], rows, 'No Connection Keys.')}
${mint}</section>`;
}

async function rowOf(view: PageView): Promise<IntegrationRow | null> {
  const slug = view.params.slug ?? '';
  if (!SLUG.test(slug)) return null;
  // Read from the list, as the list page is: one integration's own answer counts the LLM gateway
  // on only with the workspace's own key (the API's rule), where the list counts any connection,
  // and the two pages must not say "On" and "Off" of one integration.
  const answer = await view.api.get<IntegrationRow[]>('/api/integrations');
  const row = answer.ok && Array.isArray(answer.body) ? answer.body.find((r) => r.provider === slug) : null;
  return row?.enabled ? row : null;
}
