import { randomUUID } from 'node:crypto';
import { html, type SafeHtml } from '../../../http/html.js';
import { APP_SLUG } from '../../routes/deploy.js';
import type { ApiAnswer } from '../api.js';
import {
  type DashboardPage,
  field,
  fromAnswer,
  input,
  NAME_MAX,
  nameRefusal,
  type PageView,
} from '../page.js';

interface CatalogTool {
  slug: string;
  name: string;
  description: string | null;
  category: string | null;
}

interface WizardInput {
  key: string;
  label: string;
  type: 'text' | 'secret' | 'number' | 'boolean' | 'url';
  required: boolean;
}

type Section = { type: 'integration'; providers: string[] } | { type: 'inputs'; keys: string[] };

export interface DeployableTool {
  toolSlug: string;
  toolName: string;
  description: string | null;
  iconUrl: string;
  version: string;
  wizardInputs: WizardInput[];
  wizardLayout: { version: 1; subSteps: { id: string; title: string; sections: Section[] }[] } | null;
}

interface Requirement {
  provider: string;
  name: string;
  description: string | null;
  alreadyEnabled: boolean;
}

interface Framing {
  amounts: { usd: number; label: string; cold_start: boolean }[];
}

async function deployable(view: PageView): Promise<DeployableTool[]> {
  const answer = await view.api.get<{ tools: DeployableTool[] }>('/api/tools/deployable');
  return answer.ok ? answer.body.tools : [];
}

/**
 * The tools catalog: every tool with what it does, and a way to deploy those the deployable list
 * offers (an active release this platform can run; a listing-only release offers no Deploy).
 */
export const toolsPage: DashboardPage = {
  path: '/tools',
  nav: 'tools',
  title: () => 'Tools',
  async render(view) {
    const [catalog, tools] = await Promise.all([
      view.api.get<{ tools: CatalogTool[] }>('/api/tools/catalog'),
      deployable(view),
    ]);
    const ready = new Map(tools.map((tool) => [tool.toolSlug, tool]));
    const list = catalog.ok ? catalog.body.tools : [];
    if (list.length === 0) return html`<p class="muted">The catalog has no tools yet.</p>`;
    return html`<div class="grid">${list.map((tool) => {
      const release = ready.get(tool.slug);
      return html`<article class="card" aria-labelledby="tool-${tool.slug}">
<h2 id="tool-${tool.slug}"><img src="${view.base}/static/tools/${tool.slug}.svg" alt="" width="24" height="24"> ${release ? html`<a href="${view.base}/tools/${tool.slug}">${tool.name}</a>` : tool.name}</h2>
<p>${tool.description ?? ''}</p><p class="muted">${tool.category ?? ''}${release ? ` · version ${release.version}` : ' · not deployable yet'}</p>
${release && view.user!.role !== 'viewer' ? html`<p><a class="button" href="${view.base}/tools/${tool.slug}/deploy">Deploy ${tool.name}</a></p>` : null}
</article>`;
    })}</div>`;
  },
};

/** One tool: what it needs, what credit buys of it, and the way to deploy it. */
export const toolPage: DashboardPage = {
  path: '/tools/:slug',
  nav: 'tools',
  async title(view) {
    return (await toolOf(view))?.toolName ?? 'Tool';
  },
  async render(view) {
    const tool = await toolOf(view);
    if (!tool) return { status: 404, message: 'There is no deployable tool of that name.' };
    const [needs, framing] = await Promise.all([
      view.api.get<{ required: Requirement[]; optional: Requirement[] }>(
        `/api/tools/${tool.toolSlug}/integrations`,
      ),
      view.api.get<Framing>(`/api/tools/${tool.toolSlug}/usage-framing`),
    ]);
    const requirement = (r: Requirement) =>
      html`<li>${r.name} ${r.alreadyEnabled ? html`<span class="status" data-status="connected">ready</span>` : html`<a href="${view.base}/integrations/${r.provider}">connect</a>`}</li>`;
    return html`<p>${tool.description ?? ''}</p><p class="muted">Version ${tool.version}</p>
<section aria-labelledby="needs-title"><h2 id="needs-title">Integrations</h2>
${needs.ok && needs.body.required.length ? html`<p>Required:</p><ul>${needs.body.required.map(requirement)}</ul>` : html`<p class="muted">It needs no integration.</p>`}
${needs.ok && needs.body.optional.length ? html`<p>Optional:</p><ul>${needs.body.optional.map(requirement)}</ul>` : null}</section>
${framing.ok ? html`<section aria-labelledby="framing-title"><h2 id="framing-title">What credit buys</h2><ul>${framing.body.amounts.map((a) => html`<li>USD ${a.usd}: ${a.label}${a.cold_start ? ' (an estimate)' : ''}</li>`)}</ul></section>` : null}
${view.user!.role !== 'viewer' ? html`<p><a class="button" href="${view.base}/tools/${tool.toolSlug}/deploy">Deploy ${tool.toolName}</a></p>` : null}`;
  },
};

/**
 * The deploy wizard: the release's `wizardLayout` step by step (each a fieldset; the script shows
 * one at a time), or one page of inputs when the layout is null. Deploying answers the App Key
 * once, on the page the form returns; a form deploys at most once (its idempotency key).
 */
export const deployPage: DashboardPage = {
  path: '/tools/:slug/deploy',
  nav: 'tools',
  async title(view) {
    const tool = await toolOf(view);
    return tool ? `Deploy ${tool.toolName}` : 'Deploy';
  },
  async render(view) {
    const tool = await toolOf(view);
    if (!tool) return { status: 404, message: 'There is no deployable tool of that name.' };
    // The deploy API refuses viewers: the form is not shown to them to fill in for nothing.
    if (view.user!.role === 'viewer') return { status: 403, message: 'Viewers cannot deploy tools.' };
    const needs = await view.api.get<{ required: Requirement[]; optional: Requirement[] }>(
      `/api/tools/${tool.toolSlug}/integrations`,
    );
    const requirements = needs.ok ? [...needs.body.required, ...needs.body.optional] : [];
    const inputsByKey = new Map(tool.wizardInputs.map((i) => [i.key, i]));
    // After a refusal the form comes back as it was sent (secrets excepted).
    const posted = view.posted;
    const section = (s: Section): SafeHtml =>
      s.type === 'integration'
        ? html`<ul class="integrations">${s.providers.map((provider) => {
            const r = requirements.find((entry) => entry.provider === provider);
            return html`<li>${r?.name ?? provider}: ${r?.alreadyEnabled ? html`<span class="status" data-status="connected">connected</span>` : html`<a href="${view.base}/integrations/${provider}">connect ${r?.name ?? provider} first</a>`}</li>`;
          })}</ul>`
        : html`${s.keys.map((key) => (inputsByKey.has(key) ? wizardInput(inputsByKey.get(key)!, posted) : null))}`;
    const steps = tool.wizardLayout?.subSteps ?? null;
    const body = steps
      ? html`${steps.map(
          (step, i) =>
            html`<fieldset class="wizard-step" data-step="${i + 1}" data-steps="${steps.length}"><legend tabindex="-1">Step ${i + 1} of ${steps.length}: ${step.title}</legend>${step.sections.map(section)}</fieldset>`,
        )}`
      : html`<fieldset class="wizard-step"><legend>Settings</legend>${requirements.length ? section({ type: 'integration', providers: requirements.map((r) => r.provider) }) : null}${tool.wizardInputs.map((wizard) => wizardInput(wizard, posted))}</fieldset>`;
    return html`<p>${tool.description ?? ''}</p>
${view.form(
  'deploy',
  html`<input type="hidden" name="idempotency" value="${randomUUID()}">
<fieldset><legend>The app</legend>${input('app-slug', 'Address', { name: 'slug', required: true, hint: `Its address will be /apps/<address>/: ${SLUG_RULE}`, value: posted?.slug ?? tool.toolSlug })}${input('app-name', 'Name', { name: 'name', value: posted?.name ?? tool.toolName, maxlength: NAME_MAX })}</fieldset>
<div class="wizard"${steps ? html` data-wizard` : null}>${body}</div>`,
  { submit: `Deploy ${tool.toolName}`, label: `Deploy ${tool.toolName}` },
)}`;
  },
  actions: {
    deploy: {
      done: 'Deployed.',
      async run(view, fields) {
        const tool = await toolOf(view);
        if (!tool) return { refused: 'There is no deployable tool of that name.', status: 404 };
        const inputs: Record<string, string | number | boolean> = {};
        for (const wizard of tool.wizardInputs) {
          const value = fields[`input_${wizard.key}`];
          if (wizard.type === 'boolean') inputs[wizard.key] = value === 'on';
          else if (value !== undefined && value.trim() !== '') inputs[wizard.key] = value.trim();
        }
        const slug = field(fields, 'slug').trim();
        const name = field(fields, 'name').trim();
        // Said here in the form's words, before the API: every request to it counts against the
        // deploy limit (5 an hour per address), and a mistyped address should not spend one.
        if (!APP_SLUG.test(slug)) return { refused: `The address must be ${SLUG_RULE}`, status: 400 };
        const refusal = name ? nameRefusal("The app's name", name) : null;
        if (refusal) return { refused: refusal, status: 400 };
        const keyed = /^[\w-]{1,64}$/.test(field(fields, 'idempotency'));
        const deploy = () =>
          view.api.send<{ app: { id: string }; appKey: { key: string } }>(
            'POST',
            '/api/deploy',
            {
              toolSlug: tool.toolSlug,
              slug,
              ...(name ? { name } : {}),
              inputs,
            },
            keyed ? { 'idempotency-key': field(fields, 'idempotency') } : {},
          );
        let answer = await deploy();
        // The form sent twice (a double submit): the second waits for the first and answers its
        // replay, App Key included, so whichever answer the browser shows has the key.
        for (let tries = 0; keyed && tries < IN_PROGRESS_TRIES && isInProgress(answer); tries++) {
          await new Promise((resolve) => setTimeout(resolve, IN_PROGRESS_WAIT_MS));
          answer = await deploy();
        }
        // No credit (never added, or spent): the refusal leads to where credit is added.
        if (answer.status === 402)
          return {
            refused: answer,
            status: 402,
            next: { href: `${view.base}/billing`, text: 'Add credit on the billing page' },
          };
        if (!answer.ok) return fromAnswer(answer);
        return {
          show: html`<div class="notice done" role="status"><p><strong>Deployed.</strong> Its App Key is below: copy it now, it is not shown again.</p>
<p class="secret" id="new-key">${answer.body.appKey.key}</p><p><a href="${view.base}/deployments/${answer.body.app.id}">Open the deployment</a></p></div>`,
        };
      },
    },
  },
};

/** How long a second submit of one deploy form waits for the first: 20 times 250 ms. */
const IN_PROGRESS_TRIES = 20;
const IN_PROGRESS_WAIT_MS = 250;

/** The deploy API's answer while a request with the same Idempotency-Key still runs: a 409 to retry. */
function isInProgress(answer: ApiAnswer): boolean {
  return answer.status === 409 && answer.headers.get('retry-after') !== null;
}

/** What the address may be, as `APP_SLUG` has it. */
const SLUG_RULE =
  '3 to 64 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen.';

/** One wizard input, holding what `posted` gave it; a secret is never written back into a page. */
function wizardInput(wizard: WizardInput, posted: Record<string, string> | undefined): SafeHtml {
  const id = `input-${wizard.key}`;
  const value = posted?.[`input_${wizard.key}`];
  if (wizard.type === 'boolean') {
    return html`<p><input type="checkbox" id="${id}" name="input_${wizard.key}"${value === 'on' ? html` checked` : null}> <label for="${id}" class="inline">${wizard.label}</label></p>`;
  }
  const type = { text: 'text', secret: 'password', number: 'number', url: 'url' }[wizard.type];
  const secretHint = posted
    ? 'Kept sealed as a secret of the app; never shown again, so type it again after a refusal.'
    : 'Kept sealed as a secret of the app; never shown again.';
  return input(id, wizard.label, {
    name: `input_${wizard.key}`,
    type,
    required: wizard.required,
    ...(wizard.type === 'secret' ? { hint: secretHint } : value !== undefined ? { value } : {}),
  });
}

async function toolOf(view: PageView): Promise<DeployableTool | null> {
  const slug = view.params.slug ?? '';
  return (await deployable(view)).find((tool) => tool.toolSlug === slug) ?? null;
}
