import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { MAX_GRANT_MICROS, OperatorError, Operators, type TenantOverview } from '@service/core/billing';
import { Integrations, ToolCatalog } from '@service/core/catalog';
import { TenantStatuses } from '@service/core/identity';
import { createStore, type Store } from '@service/core/store';

/**
 * `pnpm admin`: the operators' actions from a shell, on the store `pnpm start` uses
 * (`DATABASE_URL`, else the embedded store at `SERVICE_DATA_DIR`). Each action writes its audit
 * row, as the admin API does.
 *
 * @see docs/operators.md
 */
const USAGE = `Usage: pnpm admin <command>

  tenants [--limit N] [--offset N]         list tenants, newest first
  grant <tenant|email> <usd> --reason TEXT  credit a tenant (whole cents, at most 10000)
  suspend <tenant|email> --reason TEXT      refuse the tenant's metered calls
  resume <tenant|email> [--reason TEXT]     let them through again
  integrations list                         every integration and whether it is enabled
  integrations enable|disable <slug>        bring an integration back to the catalog, or withdraw it
  tools list                                the platform's tools, their state and active release
  tools enable|disable <slug>               show or hide a tool in the public catalog
  tools publish <slug> <version> <file>     publish a release from a service.yaml (made active)

A tenant is its id, or the email of its owner (who must own exactly one workspace).
Exit codes: 0 done, 1 refused (no such tenant, already suspended, ...), 2 usage error,
3 the store cannot be opened.`;

/** Exit codes, documented in docs/operators.md. */
const REFUSED = 1;
const USAGE_ERROR = 2;
const STORE_UNAVAILABLE = 3;

class Exit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const usage = (problem: string) => new Exit(USAGE_ERROR, `${problem}\n\n${USAGE}`);

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseCommand>;
  try {
    parsed = parseCommand(argv);
  } catch (error) {
    throw error instanceof Exit ? error : usage((error as Error).message);
  }
  if (parsed.command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let store: Store;
  try {
    store = await createStore();
  } catch (error) {
    throw new Exit(STORE_UNAVAILABLE, `The store cannot be opened: ${(error as Error).message}`);
  }
  try {
    if (parsed.command === 'integrations') {
      await runIntegrations(new Integrations(store.db, process.env.SERVICE_BASE_URL?.trim() || ''), parsed);
      return;
    }
    if (parsed.command === 'tools') {
      await runTools(store, parsed);
    } else {
      await run(new Operators(store.db, new TenantStatuses(store.db)), parsed);
    }
  } finally {
    await store.close();
  }
}

type Command =
  | { command: 'help' }
  | { command: 'tenants'; limit: number; offset: number }
  | { command: 'grant'; tenant: string; amountMicros: number; reason: string }
  | { command: 'suspend'; tenant: string; reason: string }
  | { command: 'resume'; tenant: string; reason: string | null }
  | { command: 'integrations'; action: 'list' }
  | { command: 'integrations'; action: 'enable' | 'disable'; slug: string }
  | { command: 'tools'; action: 'list' }
  | { command: 'tools'; action: 'enable' | 'disable'; slug: string }
  | { command: 'tools'; action: 'publish'; slug: string; version: string; file: string };

function parseCommand(argv: string[]): Command {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      reason: { type: 'string' },
      limit: { type: 'string' },
      offset: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === 'help') return { command: 'help' };
  const reason = values.reason?.trim() || null;
  const args = (count: number) => {
    if (rest.length !== count) throw usage(`${command} takes ${count} argument${count === 1 ? '' : 's'}`);
    return rest;
  };
  const needReason = () => {
    if (!reason) throw usage(`${command} needs --reason`);
    if (reason.length > 500) throw usage('--reason is at most 500 characters');
    return reason;
  };
  switch (command) {
    case 'tenants':
      args(0);
      return {
        command,
        limit: count(values.limit, 50, 1, 200, '--limit'),
        offset: count(values.offset, 0, 0, 1_000_000, '--offset'),
      };
    case 'grant': {
      const [tenant, usd] = args(2);
      return { command, tenant: tenant!, amountMicros: grantMicros(usd!), reason: needReason() };
    }
    case 'suspend':
      return { command, tenant: args(1)[0]!, reason: needReason() };
    case 'resume':
      if (reason && reason.length > 500) throw usage('--reason is at most 500 characters');
      return { command, tenant: args(1)[0]!, reason };
    case 'integrations': {
      const [action, slug] = rest;
      if (action === 'list' && rest.length === 1) return { command, action };
      if ((action === 'enable' || action === 'disable') && rest.length === 2) {
        return { command, action, slug: slug! };
      }
      throw usage('integrations takes list, or enable or disable and a slug');
    }
    case 'tools': {
      const [action, ...toolArgs] = rest;
      const toolArgCount = action === 'list' ? 0 : action === 'publish' ? 3 : 1;
      if (action !== 'list' && action !== 'enable' && action !== 'disable' && action !== 'publish') {
        throw usage('tools takes list, enable, disable or publish');
      }
      if (toolArgs.length !== toolArgCount) throw usage(`tools ${action} takes ${toolArgCount} argument(s)`);
      if (action === 'list') return { command, action };
      if (action === 'publish') {
        return { command, action, slug: toolArgs[0]!, version: toolArgs[1]!, file: toolArgs[2]! };
      }
      return { command, action, slug: toolArgs[0]! };
    }
    case undefined:
      throw usage('Name a command.');
    default:
      throw usage(`Unknown command: ${command}`);
  }
}

/** Whole cents, more than 0 and at most the largest grant. */
function grantMicros(usd: string): number {
  const micros = /^\d{1,6}(\.\d{1,2})?$/.test(usd) ? Math.round(Number(usd) * 100) * 10_000 : Number.NaN;
  if (!(micros > 0 && micros <= MAX_GRANT_MICROS)) {
    throw usage(
      `The amount must be USD in whole cents, more than 0 and at most ${MAX_GRANT_MICROS / 1e6}: ${usd}`,
    );
  }
  return micros;
}

function count(value: string | undefined, fallback: number, min: number, max: number, name: string): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw usage(`${name} must be a whole number from ${min} to ${max}`);
  return n;
}

/**
 * Lists integrations, or switches one for the whole catalog; the change notice drops every
 * running instance's cached public list at once.
 */
async function runIntegrations(
  integrations: Integrations,
  parsed: Extract<Command, { command: 'integrations' }>,
): Promise<void> {
  if (parsed.action === 'list') {
    const rows = await integrations.adminList();
    for (const row of rows) {
      process.stdout.write(
        `${[row.provider.padEnd(20), (row.enabled ? 'enabled' : 'disabled').padEnd(9), row.kind.padEnd(16), row.name].join('  ')}\n`,
      );
    }
    if (rows.length === 0) process.stdout.write('No integrations.\n');
    return;
  }
  const enabled = parsed.action === 'enable';
  if (!(await integrations.setEnabled(parsed.slug, enabled))) {
    throw new Exit(REFUSED, `Integration not found: ${parsed.slug}`);
  }
  process.stdout.write(`${enabled ? 'Enabled' : 'Disabled'} ${parsed.slug}.\n`);
}

/** The catalog's tools: every change drops the catalog caches of running instances. */
async function runTools(store: Store, parsed: Extract<Command, { command: 'tools' }>): Promise<void> {
  const tools = new ToolCatalog(store.db, {
    baseUrl: process.env.SERVICE_BASE_URL?.trim() || 'http://localhost:8787',
  });
  if (parsed.action === 'list') {
    const all = await tools.listForAdmin();
    for (const tool of all) {
      const state = [tool.enabled ? 'enabled' : 'disabled', tool.internal ? 'internal' : '']
        .filter(Boolean)
        .join(',');
      process.stdout.write(
        `${[tool.slug.padEnd(24), state.padEnd(17), tool.release?.version ?? '-', tool.name].join('  ')}\n`,
      );
    }
    if (all.length === 0) process.stdout.write('No tools.\n');
    return;
  }
  if (parsed.action === 'publish') {
    let manifest: string;
    try {
      manifest = await readFile(parsed.file, 'utf8');
    } catch (error) {
      throw new Exit(REFUSED, `Could not read ${parsed.file}: ${(error as Error).message}`);
    }
    const result = await tools.publish({ toolSlug: parsed.slug, version: parsed.version, manifest });
    if (result.ok) {
      process.stdout.write(`Published ${parsed.slug} ${parsed.version}: now its active release.\n`);
      return;
    }
    if (result.reason === 'invalid_manifest') {
      const lines = result.problems.map(
        (problem) =>
          `  ${problem.line ? `${parsed.file}:${problem.line}:${problem.column}  ` : ''}${problem.path ? `${problem.path}: ` : ''}${problem.message}`,
      );
      throw new Exit(REFUSED, `The manifest is not valid:\n${lines.join('\n')}`);
    }
    throw new Exit(
      REFUSED,
      result.reason === 'tool_not_found'
        ? `Tool not found: ${parsed.slug}`
        : `${parsed.slug} already has a release ${parsed.version}`,
    );
  }
  if (!(await tools.update(parsed.slug, { enabled: parsed.action === 'enable' }))) {
    throw new Exit(REFUSED, `Tool not found: ${parsed.slug}`);
  }
  process.stdout.write(`${parsed.action === 'enable' ? 'Enabled' : 'Disabled'} ${parsed.slug}.\n`);
}

async function run(
  operators: Operators,
  parsed: Exclude<Command, { command: 'help' } | { command: 'integrations' } | { command: 'tools' }>,
): Promise<void> {
  if (parsed.command === 'tenants') {
    const tenants = await operators.listTenants(parsed);
    for (const tenant of tenants) process.stdout.write(`${line(tenant)}\n`);
    if (tenants.length === 0) process.stdout.write('No tenants.\n');
    return;
  }
  const tenantId = await resolveTenant(operators, parsed.tenant);
  const input = { tenantId, operator: operatorName(), reason: parsed.reason };
  try {
    if (parsed.command === 'grant') {
      const granted = await operators.grant({ ...input, amountMicros: parsed.amountMicros });
      process.stdout.write(
        `Granted USD ${usd(parsed.amountMicros)} to ${tenantId}: balance USD ${usd(granted.balanceAfterMicros)} (ledger entry ${granted.action.ledgerEntryId}).\n`,
      );
    } else if (parsed.command === 'suspend') {
      await operators.suspend(input);
      process.stdout.write(`Suspended ${tenantId}: its metered calls are refused.\n`);
    } else {
      await operators.resume(input);
      process.stdout.write(`Resumed ${tenantId}.\n`);
    }
  } catch (error) {
    if (error instanceof OperatorError) throw new Exit(REFUSED, error.message);
    throw error;
  }
}

/** A tenant id as given, or the one workspace an owner's email owns. */
async function resolveTenant(operators: Operators, ref: string): Promise<string> {
  if (ref.includes('@')) {
    const owned = await operators.tenantsOwnedBy(ref);
    if (owned.length === 1) return owned[0]!;
    if (owned.length === 0) throw new Exit(REFUSED, `No workspace is owned by ${ref}.`);
    throw new Exit(REFUSED, `${ref} owns several workspaces; name one by id: ${owned.join(', ')}`);
  }
  const tenant = await operators.getTenant(ref);
  if (!tenant) throw new Exit(REFUSED, `Tenant not found: ${ref}`);
  return tenant.id;
}

/** Who the audit trail names: the shell's user. */
function operatorName(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

function line(tenant: TenantOverview): string {
  const owners = tenant.ownerEmails.join(',') || '-';
  return [
    tenant.id,
    tenant.status.padEnd(9),
    `USD ${usd(tenant.balanceMicros)}`.padEnd(14),
    owners,
    tenant.name,
  ].join('  ');
}

function usd(micros: number): string {
  return (micros / 1_000_000).toFixed(2);
}

main(process.argv.slice(2)).then(
  () => {
    process.exitCode = 0;
  },
  (error: unknown) => {
    if (error instanceof Exit) {
      process.stderr.write(`${error.message}\n`);
      process.exitCode = error.code;
    } else {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = STORE_UNAVAILABLE;
    }
  },
);
