import { html } from '../../../http/html.js';
import { type DashboardPage, field, fromAnswer, input, NAME_MAX, nameRefusal, table } from '../page.js';

interface Tenant {
  id: string;
  name: string;
  role: string;
}

/**
 * Settings: the workspace's name (owners rename it), the person's own name, their workspaces
 * with switching between them, and a new workspace.
 */
export const settingsPage: DashboardPage = {
  path: '/settings',
  nav: 'settings',
  title: () => 'Settings',
  async render(view) {
    const [user, tenants] = await Promise.all([
      view.api.get<{ user: { name: string | null; email: string | null } }>('/api/user/me'),
      view.api.get<{ tenants: Tenant[]; currentTenantId: string }>('/api/tenants'),
    ]);
    const list = tenants.ok ? tenants.body.tenants : [];
    const current = list.find((t) => t.id === view.user!.tenantId);
    return html`<section aria-labelledby="ws-title"><h2 id="ws-title">This workspace</h2>
${
  view.user!.role === 'owner'
    ? view.form(
        'rename-workspace',
        input('workspace-name', 'Workspace name', {
          name: 'name',
          value: current?.name ?? '',
          required: true,
          maxlength: NAME_MAX,
        }),
        { submit: 'Rename workspace' },
      )
    : html`<p>${current?.name ?? ''} <span class="muted">(owners rename it)</span></p>`
}</section>
<section aria-labelledby="me-title"><h2 id="me-title">You</h2>
<p class="muted">${user.ok ? (user.body.user.email ?? '') : ''}</p>
${view.form('rename-me', input('my-name', 'Your name', { name: 'name', value: user.ok ? (user.body.user.name ?? '') : '', maxlength: NAME_MAX }), { submit: 'Save name' })}</section>
<section aria-labelledby="all-title"><h2 id="all-title">Your workspaces</h2>
${table(
  'Your workspaces',
  ['Workspace', 'Your role', ''],
  list.map((t) => [
    t.name,
    t.role,
    t.id === view.user!.tenantId
      ? html`<span class="muted">current</span>`
      : view.form('switch', html`<input type="hidden" name="tenant" value="${t.id}">`, {
          submit: 'Switch',
          buttonClass: 'secondary',
          label: `Switch to ${t.name}`,
        }),
  ]),
  'No workspaces.',
)}
${view.form('create-workspace', input('new-workspace', 'New workspace', { name: 'name', required: true, maxlength: NAME_MAX }), { submit: 'Create workspace' })}</section>`;
  },
  actions: {
    'rename-workspace': {
      done: 'Workspace renamed.',
      run: async (view, f) => {
        const name = field(f, 'name').trim();
        const refusal = nameRefusal('The workspace name', name);
        if (refusal) return { refused: refusal };
        return fromAnswer(await view.api.send('PATCH', '/api/tenants/me', { name }));
      },
    },
    'rename-me': {
      done: 'Name saved.',
      run: async (view, f) => {
        const name = field(f, 'name').trim();
        const refusal = name === '' ? null : nameRefusal('Your name', name);
        if (refusal) return { refused: refusal };
        return fromAnswer(await view.api.send('PATCH', '/api/user/me', { name: name === '' ? null : name }));
      },
    },
    switch: {
      done: 'Switched workspace.',
      run: async (view, f) =>
        fromAnswer(await view.api.send('POST', '/api/tenants/switch', { tenantId: field(f, 'tenant') })),
    },
    'create-workspace': {
      done: 'Workspace created; you are working in it now.',
      run: async (view, f) => {
        const name = field(f, 'name').trim();
        const refusal = nameRefusal("The new workspace's name", name);
        if (refusal) return { refused: refusal };
        return fromAnswer(await view.api.send('POST', '/api/tenants', { name }));
      },
    },
  },
};
