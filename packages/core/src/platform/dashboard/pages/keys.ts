import { html, type SafeHtml } from '../../../http/html.js';
import { onceInput, oncePerForm } from '../form-once.js';
import { when } from '../format.js';
import {
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

export interface KeyView {
  id: string;
  kind: string;
  name: string | null;
  prefix: string;
  appId: string | null;
  userId: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  /** The deployment holding it (its own App Key, the platform's to hand over), null for any other key. */
  deployment: { appId: string; slug: string; name: string } | null;
}

export interface AppSummary {
  id: string;
  slug: string;
  name: string;
}

/** A key just minted: shown on the answering page only, with how to use it. */
export function newKeyBlock(what: string, apiKey: string, use: SafeHtml | null = null): SafeHtml {
  return html`<div class="notice done" role="status"><p><strong>${what}</strong> Copy it now: it is not shown again.</p>
<p class="secret" id="new-key">${apiKey}</p>${use}</div>`;
}

/**
 * How a CLI key made here reaches the developer CLI: `service login --no-browser` takes it pasted
 * where it asks for the login code. Said on the panel, since making it revoked the CLI's key.
 */
function cliKeyUse(baseUrl: string): SafeHtml {
  return html`<p id="new-key-use">To use it in the developer CLI, run <code>service login --no-browser --api-base ${baseUrl}</code> and paste it where it asks for the login code (it is not echoed). The CLI's earlier key no longer works.</p>`;
}

/**
 * What a rotation's answer says of the new key: a deployment's own App Key is the platform's to
 * hand over (`held`: the deployment as it reads after its restart); any other key, `unheld`, is
 * the user's to pass on.
 */
export function rotatedKeyNote(held: { state: string } | null, unheld: string): string {
  if (!held) return unheld;
  return held.state === 'stopped'
    ? 'The new App Key. The platform handed it to the deployment, which gets it when it is redeployed.'
    : 'The new App Key. The platform handed it to the deployment and restarted it; nothing is left for you to do.';
}

/**
 * Rotates the key named by the form's `field`, showing the new one once with what it is for
 * (`unheld` of a key no deployment holds).
 */
export function rotateKeyAction(fieldName: string, unheld: string): PageAction {
  return {
    done: 'Key rotated.',
    async run(view, fields) {
      const id = encodeURIComponent(field(fields, fieldName));
      const answer = await view.api.send<{ apiKey: string; deployment: { state: string } | null }>(
        'POST',
        `/api/keys/${id}/rotate`,
        {},
      );
      if (!answer.ok) return fromAnswer(answer);
      return { show: newKeyBlock(rotatedKeyNote(answer.body.deployment, unheld), answer.body.apiKey) };
    },
  };
}

/** The answer to a new-key form sent again (its answer reloaded): nothing was created. */
const KEY_SENT_AGAIN =
  'This key was already created and shown once; it is not shown again and no other key was created. If you did not copy it, revoke it below and create another.';

/**
 * Keys: the workspace's App Keys and CLI keys (owners only, as the keys API decides). A new or
 * rotated key is shown once, on the page that answers the form, never in a URL.
 */
export const keysPage: DashboardPage = {
  path: '/keys',
  nav: 'keys',
  title: () => 'Keys',
  async render(view) {
    if (view.user!.role !== 'owner')
      return { status: 403, message: "Only the workspace's owners manage keys." };
    const [keys, apps] = await Promise.all([
      view.api.get<{ keys: KeyView[] }>('/api/keys'),
      view.api.get<{ apps: AppSummary[] }>('/api/apps'),
    ]);
    const appList = apps.ok ? apps.body.apps : [];
    const appName = new Map(appList.map((app) => [app.id, app.name]));
    const keyList = keys.ok ? keys.body.keys : [];
    const rows = keyList.map((key) => {
      const id = html`<input type="hidden" name="id" value="${key.id}">`;
      const rotate = view.form('rotate', id, {
        submit: 'Rotate',
        buttonClass: 'secondary',
        label: `Rotate ${key.name ?? key.prefix}`,
      });
      const held = key.deployment;
      // Another owner's CLI key acts as them: it is revoked here, never rotated (the API refuses it).
      const theirs = key.kind === 'cli' && key.userId !== view.user!.userId;
      // A key with an expiry was rotated already (it works out its overlap): its replacement is
      // the one to rotate, and the API refuses this one.
      const offerRotate = !theirs && !key.expiresAt;
      return [
        key.name ?? html`<span class="muted">unnamed</span>`,
        held
          ? html`App Key · held by the deployment <a href="${view.base}/deployments/${held.appId}">${held.name}</a>`
          : key.kind === 'app'
            ? `App Key · ${appName.get(key.appId ?? '') ?? 'app'}`
            : theirs
              ? 'CLI key · held by another owner'
              : 'CLI key',
        html`<code>${key.prefix}…</code>`,
        when(key.createdAt),
        key.lastUsedAt ? when(key.lastUsedAt) : 'never',
        key.expiresAt ? `expires ${when(key.expiresAt)}` : '',
        // A deployment's own key cannot be revoked (the API refuses it): rotating hands the new
        // key to the deployment and restarts it.
        held
          ? html`<div class="row-actions">${offerRotate ? rotate : ''}<p class="field-hint">Rotating hands the new key to the deployment and restarts it. To end it, delete the deployment.</p></div>`
          : html`<div class="row-actions">${offerRotate ? rotate : ''}${view.form('revoke', id, { submit: 'Revoke', buttonClass: 'danger', confirm: 'Revoke this key? Anything using it stops working at once.', label: `Revoke ${key.name ?? key.prefix}` })}</div>`,
      ];
    });
    return html`<section aria-labelledby="keys-title"><h2 id="keys-title">App Keys and CLI keys</h2>
${table('Keys', ['Name', 'Kind', 'Starts with', 'Created', 'Last used', 'Rotation', 'Actions'], rows, 'No keys yet.')}</section>
<section aria-labelledby="new-title"><h2 id="new-title">New key</h2>
${createForm(
  view,
  appList,
  keyList.filter((key) => key.kind === 'cli' && key.userId === view.user!.userId),
)}</section>`;
  },
  actions: {
    create: {
      done: 'Key created.',
      async run(view, fields) {
        const kind = field(fields, 'kind') === 'cli' ? 'cli' : 'app';
        const name = field(fields, 'name').trim();
        const refusal =
          kind === 'app' && field(fields, 'app') === ''
            ? 'Choose the app the App Key is for (deploy a tool first if there is none).'
            : name === ''
              ? null
              : nameRefusal("The key's name", name);
        if (refusal) return { refused: refusal };
        // A form mints at most one key: sent again (a reload of its answer), it would mint another,
        // and a CLI key would revoke the one just copied.
        return oncePerForm(view, fields, '/keys create', KEY_SENT_AGAIN, async () => {
          // The CLI keys a new one replaces, to name them on the answer.
          const before = kind === 'cli' ? await view.api.get<{ keys: KeyView[] }>('/api/keys') : null;
          const answer = await view.api.send<{ apiKey: string; revokedKeyIds: string[] }>(
            'POST',
            '/api/keys',
            { kind, ...(kind === 'app' ? { appId: field(fields, 'app') } : {}), ...(name ? { name } : {}) },
          );
          if (!answer.ok) return fromAnswer(answer);
          const revoked = (before?.ok ? before.body.keys : []).filter((key) =>
            answer.body.revokedKeyIds.includes(key.id),
          );
          return {
            show: html`${newKeyBlock('Your new key.', answer.body.apiKey, kind === 'cli' ? cliKeyUse(view.ctx.baseUrl) : null)}${
              revoked.length > 0
                ? html`<p class="notice done" id="revoked-keys">It replaces your earlier CLI keys, revoked now: ${keyNames(revoked)}.</p>`
                : null
            }`,
          };
        });
      },
    },
    rotate: rotateKeyAction('id', 'The rotated key. The old one keeps working until its rotation ends.'),
    revoke: {
      done: 'Key revoked.',
      run: async (view, fields) =>
        fromAnswer(await view.api.send('DELETE', `/api/keys/${encodeURIComponent(field(fields, 'id'))}`)),
    },
  },
};

/** Keys as their names and prefixes, for a sentence. */
function keyNames(keys: readonly KeyView[]): SafeHtml[] {
  return keys.map(
    (key, index) => html`${index > 0 ? ', ' : ''}${key.name ?? 'unnamed'} (<code>${key.prefix}…</code>)`,
  );
}

function createForm(view: PageView, apps: AppSummary[], cliKeys: readonly KeyView[]): SafeHtml {
  const replaces =
    cliKeys.length === 0
      ? html`A new CLI key replaces your earlier CLI keys; you have none now.`
      : html`A new CLI key replaces your earlier CLI keys: creating one revokes ${keyNames(cliKeys)} at once.`;
  // An App Key belongs to an app: with none yet, the form offers a CLI key and says where apps come from.
  const hasApps = apps.length > 0;
  const kind = html`<label for="key-kind">Kind</label><p class="field-hint" id="key-kind-hint">${replaces}${hasApps ? null : html` App Keys are for deployed tools, and this workspace has none yet: <a href="${view.base}/tools">deploy a tool</a> to get one.`}</p><select id="key-kind" name="kind" aria-describedby="key-kind-hint">${hasApps ? html`<option value="app">App Key (for a deployed tool)</option>` : null}<option value="cli">CLI key (for you, in the developer CLI)</option></select>${
    hasApps
      ? html`
<label for="key-app">App (for an App Key)</label><select id="key-app" name="app">${apps.map((app) => html`<option value="${app.id}">${app.name} (${app.slug})</option>`)}</select>`
      : null
  }`;
  return view.form(
    'create',
    html`${onceInput()}${kind}
${input('key-name', 'Name', { name: 'name', placeholder: 'production', maxlength: NAME_MAX })}`,
    { submit: 'Create key', label: 'New key' },
  );
}
