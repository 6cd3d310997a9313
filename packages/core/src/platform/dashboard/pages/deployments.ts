import type { AppView as App } from '../../../deploy/app-views.js';
import { SECRET_NAME } from '../../../deploy/environment.js';
import { html } from '../../../http/html.js';
import { chart } from '../charts.js';
import { when } from '../format.js';
import {
  type DashboardPage,
  detail,
  field,
  fromAnswer,
  input,
  NAME_MAX,
  nameRefusal,
  type PageAction,
  type PageView,
  table,
} from '../page.js';
import { type KeyView, newKeyBlock, rotatedKeyNote } from './keys.js';

interface Usage {
  periods: { start: string; meters: { provider: string; meter: string; quantity: string; cost: string }[] }[];
  summary: { events: number; totalCost: number };
}

const RANGES = ['1h', '24h', '7d', '30d'] as const;

const stateOf = (app: App) => app.deployment?.state ?? 'not deployed';

/** Deployments: every app of the workspace with its state, and a link to each. */
/**
 * Deletes a deployment, then shows the list, where it says so: the deployment's own page is gone
 * (the list page carries the action too, for its notice).
 */
const deleteDeployment: PageAction = {
  done: 'Deleted.',
  async run(view, f) {
    const answer = await view.api.send('DELETE', `/api/apps/${idOf(f)}`);
    return answer.ok ? { redirect: `${view.base}/deployments?done=delete` } : fromAnswer(answer);
  },
};

export const deploymentsPage: DashboardPage = {
  path: '/deployments',
  actions: { delete: deleteDeployment },
  nav: 'deployments',
  title: () => 'Deployments',
  async render(view) {
    const apps = await view.api.get<{ apps: App[] }>('/api/apps');
    const rows = (apps.ok ? apps.body.apps : []).map((app) => [
      html`<a href="${view.base}/deployments/${app.id}">${app.name}</a>`,
      app.toolSlug ? `${app.toolSlug} ${app.version ?? ''}` : '',
      html`<span class="status" data-status="${stateOf(app)}">${stateOf(app).replace(/_/g, ' ')}</span>`,
      when(app.createdAt),
    ]);
    return html`${table('Deployments', ['Name', 'Tool', 'State', 'Created'], rows, 'Nothing deployed yet.')}
${view.user!.role === 'viewer' ? null : html`<p><a href="${view.base}/tools">Deploy a tool</a></p>`}`;
  },
};

/**
 * One deployment: its state, how to open it, its usage per meter, its logs, its App Keys
 * (rotate), secrets, and redeploy, stop, rename and delete. Owners and members act, as the apps
 * API decides; usage is the owners'.
 */
export const deploymentPage: DashboardPage = {
  path: '/deployments/:id',
  nav: 'deployments',
  async title(view) {
    return (await appOf(view))?.name ?? 'Deployment';
  },
  async render(view) {
    const app = await appOf(view);
    if (!app) return { status: 404, message: 'There is no such deployment in this workspace.' };
    const range = RANGES.find((r) => r === view.c.req.query('range')) ?? '24h';
    const role = view.user!.role;
    const [usage, logs, keys, secrets] = await Promise.all([
      role === 'owner' ? view.api.get<Usage>(`/api/deployments/${app.id}/usage?range=${range}`) : null,
      role !== 'viewer'
        ? view.api.get<{ lines: { at: string; stream: string; line: string }[] }>(
            `/api/apps/${app.id}/logs?tail=100`,
          )
        : null,
      role === 'owner' ? view.api.get<{ keys: KeyView[] }>('/api/keys') : null,
      role !== 'viewer' ? view.api.get<{ secrets: { name: string }[] }>(`/api/apps/${app.id}/secrets`) : null,
    ]);
    const d = app.deployment;
    const canAct = role !== 'viewer';
    const hidden = html`<input type="hidden" name="id" value="${app.id}">`;
    return html`<dl class="details">
${detail('State', html`<span class="status" data-status="${stateOf(app)}">${stateOf(app).replace(/_/g, ' ')}</span>`)}
${detail('Tool', app.toolSlug ? `${app.toolSlug} ${app.version ?? ''}` : '—')}
${detail('Since', d?.since ? when(d.since) : '—')}
${detail('Restarts', d ? d.restarts : '—')}
${detail('Last exit', d?.lastExit ?? '—')}
${detail('Address', d?.state === 'running' ? html`<a href="${app.openUrl}">${app.openUrl}</a>` : d ? html`${app.openUrl} <span class="muted">(answers once the deployment runs)</span>` : html`${app.openUrl} <span class="muted">(never deployed: nothing answers here)</span>`)}
</dl>
${d ? null : html`<p class="muted" id="not-deployed">This app was made without a deploy, so there is nothing here to redeploy or stop. To run a tool, deploy it from its page in the catalog.</p>`}
${canAct ? html`<div class="row-actions">${d ? html`${view.form('redeploy', hidden, { submit: 'Redeploy', buttonClass: 'secondary' })}${view.form('stop', hidden, { submit: 'Stop', buttonClass: 'secondary' })}` : null}${view.form('delete', hidden, { submit: 'Delete', buttonClass: 'danger', confirm: `Delete ${app.name}? Its keys stop working and its secrets are removed.` })}</div>` : null}
${usage ? usageSection(view, app, usage.ok ? usage.body : null, range) : null}
${keys?.ok ? keysSection(view, app, keys.body.keys) : null}
${
  secrets?.ok
    ? html`<section aria-labelledby="secrets-title"><h2 id="secrets-title">Secrets</h2>
<p class="muted">Given to the deployment as environment variables; values are never shown again.</p>
${table(
  'Secrets',
  ['Name', ''],
  secrets.body.secrets.map((s) => [
    s.name,
    view.form('unset-secret', html`${hidden}<input type="hidden" name="name" value="${s.name}">`, {
      submit: 'Remove',
      buttonClass: 'danger',
      confirm: `Remove ${s.name}? The deployment restarts.`,
      label: `Remove ${s.name}`,
    }),
  ]),
  'No secrets.',
)}
${view.form('set-secret', html`${hidden}${input('secret-name', 'Name', { name: 'name', required: true, placeholder: 'API_TOKEN' })}${input('secret-value', 'Value', { name: 'value', type: 'password', required: true })}`, { submit: 'Set secret', label: 'Set a secret' })}</section>`
    : null
}
${canAct ? html`<section aria-labelledby="rename-title"><h2 id="rename-title">Name</h2>${view.form('rename', html`${hidden}${input('app-rename', 'Name', { name: 'name', value: app.name, required: true, maxlength: NAME_MAX })}`, { submit: 'Rename' })}</section>` : null}
${logs?.ok ? html`<section aria-labelledby="logs-title"><h2 id="logs-title">Logs</h2>${logs.body.lines.length === 0 ? html`<p class="muted" id="no-logs">No output yet.</p>` : html`<pre class="logs" tabindex="0" role="log" aria-label="Last lines of output">${logs.body.lines.map((l) => `${l.at.slice(11, 19)} ${l.stream} ${l.line}\n`)}</pre>`}</section>` : null}`;
  },
  actions: {
    redeploy: {
      done: 'Redeployed.',
      run: async (view, f) => fromAnswer(await view.api.send('POST', `/api/apps/${idOf(f)}/redeploy`, {})),
    },
    stop: {
      done: 'Stopped.',
      run: async (view, f) => fromAnswer(await view.api.send('POST', `/api/apps/${idOf(f)}/stop`)),
    },
    delete: deleteDeployment,
    rename: {
      done: 'Renamed.',
      run: async (view, f) => {
        const name = field(f, 'name').trim();
        const refusal = nameRefusal("The deployment's name", name);
        if (refusal) return { refused: refusal };
        return fromAnswer(await view.api.send('PATCH', `/api/apps/${idOf(f)}`, { name }));
      },
    },
    'set-secret': {
      done: 'Secret set; the deployment restarts to read it.',
      run: async (view, f) => {
        const name = field(f, 'name').trim();
        // Checked here, in the form's words: a blank or `.` name would make the API's address
        // another one (answered 404, as if the deployment were gone).
        if (!SECRET_NAME.test(name))
          return { refused: 'A secret name is A-Z, 0-9 and _, up to 64 characters, starting with a letter.' };
        return fromAnswer(
          await view.api.send('PUT', `/api/apps/${idOf(f)}/secrets/${encodeURIComponent(name)}`, {
            value: field(f, 'value'),
          }),
        );
      },
    },
    'unset-secret': {
      done: 'Secret removed.',
      run: async (view, f) =>
        fromAnswer(
          await view.api.send(
            'DELETE',
            `/api/apps/${idOf(f)}/secrets/${encodeURIComponent(field(f, 'name'))}`,
          ),
        ),
    },
    'rotate-key': {
      done: 'Key rotated.',
      async run(view, f) {
        const answer = await view.api.send<{ apiKey: string; deployment: { state: string } | null }>(
          'POST',
          `/api/keys/${encodeURIComponent(field(f, 'key'))}/rotate`,
          {},
        );
        if (!answer.ok) return fromAnswer(answer);
        const what = rotatedKeyNote(
          answer.body.deployment,
          'The new App Key. Give it to whatever used the old one; that keeps working until its rotation ends.',
        );
        return { show: newKeyBlock(what, answer.body.apiKey) };
      },
    },
  },
};

const idOf = (fields: Record<string, string>) => encodeURIComponent(field(fields, 'id'));

function usageSection(view: PageView, app: App, usage: Usage | null, range: string) {
  const periods = usage?.periods ?? [];
  const meters = [...new Set(periods.flatMap((p) => p.meters.map((m) => `${m.provider} ${m.meter}`)))];
  return html`<section aria-labelledby="usage-title"><h2 id="usage-title">Usage</h2>
<p>${RANGES.map((r) => (r === range ? html`<strong aria-current="true">${r}</strong> ` : html`<a href="${view.base}/deployments/${app.id}?range=${r}">${r}</a> `))}</p>
${chart('usage-chart', {
  title: `Usage per meter, last ${range}`,
  x: periods.map((p) => p.start.slice(0, 16).replace('T', ' ')),
  series: meters.map((label) => ({
    label,
    values: periods.map((p) =>
      Number(p.meters.find((m) => `${m.provider} ${m.meter}` === label)?.quantity ?? 0),
    ),
  })),
  unit: 'count',
  kind: 'lines',
})}</section>`;
}

function keysSection(view: PageView, app: App, keys: KeyView[]) {
  const own = keys.filter((key) => key.kind === 'app' && key.appId === app.id);
  return html`<section aria-labelledby="appkeys-title"><h2 id="appkeys-title">App Keys</h2>
${table(
  'App Keys of this deployment',
  ['Starts with', 'Created', 'Last used', ''],
  own.map((key) => [
    html`<code>${key.prefix}…</code>`,
    when(key.createdAt),
    key.lastUsedAt ? when(key.lastUsedAt) : 'never',
    // A key in its overlap was rotated already: its replacement is the one to rotate.
    key.expiresAt
      ? html`<span class="muted">rotated, works until ${when(key.expiresAt)}</span>`
      : view.form('rotate-key', html`<input type="hidden" name="key" value="${key.id}">`, {
          submit: 'Rotate',
          buttonClass: 'secondary',
          label: `Rotate ${key.prefix}`,
        }),
  ]),
  'No App Keys.',
)}</section>`;
}

async function appOf(view: PageView): Promise<App | null> {
  const id = view.params.id ?? '';
  if (!/^[0-9a-f-]{36}$/.test(id)) return null;
  const answer = await view.api.get<{ app: App }>(`/api/apps/${id}`);
  return answer.ok ? answer.body.app : null;
}
