import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { OperatorError, Operators, type TenantOverview } from '@service/core/billing';
import { Integrations, ToolCatalog } from '@service/core/catalog';
import { TenantStatuses } from '@service/core/identity';
import { createStore, type Store } from '@service/core/store';
import { type AdminIO, type Command, Exit, REFUSED, STORE_UNAVAILABLE } from './admin-cli.js';

/** Runs a parsed command (not `help`) on the store: `main`'s work once the command line is good. */
export async function execute(parsed: Exclude<Command, { command: 'help' }>, io: AdminIO): Promise<void> {
  let store: Store;
  try {
    store = io.store ?? (await createStore());
  } catch (error) {
    throw new Exit(STORE_UNAVAILABLE, `The store cannot be opened: ${(error as Error).message}`);
  }
  try {
    if (parsed.command === 'integrations') {
      await runIntegrations(
        new Integrations(store.db, process.env.SERVICE_BASE_URL?.trim() || ''),
        parsed,
        io,
      );
      return;
    }
    if (parsed.command === 'tools') {
      await runTools(store, parsed, io);
    } else {
      await run(new Operators(store.db, new TenantStatuses(store.db)), parsed, io);
    }
  } finally {
    // A store handed in is the caller's to close.
    if (!io.store) await store.close();
  }
}

/**
 * Lists integrations, or switches one for the whole catalog; the change notice drops every
 * running instance's cached public list at once.
 */
async function runIntegrations(
  integrations: Integrations,
  parsed: Extract<Command, { command: 'integrations' }>,
  io: AdminIO,
): Promise<void> {
  if (parsed.action === 'list') {
    const rows = await integrations.adminList();
    for (const row of rows) {
      io.stdout(
        `${[row.provider.padEnd(20), (row.enabled ? 'enabled' : 'disabled').padEnd(9), row.kind.padEnd(16), row.name].join('  ')}\n`,
      );
    }
    if (rows.length === 0) io.stdout('No integrations.\n');
    return;
  }
  const enabled = parsed.action === 'enable';
  if (!(await integrations.setEnabled(parsed.slug, enabled))) {
    throw new Exit(REFUSED, `Integration not found: ${parsed.slug}`);
  }
  io.stdout(`${enabled ? 'Enabled' : 'Disabled'} ${parsed.slug}.\n`);
}

/** The catalog's tools: every change drops the catalog caches of running instances. */
async function runTools(
  store: Store,
  parsed: Extract<Command, { command: 'tools' }>,
  io: AdminIO,
): Promise<void> {
  const tools = new ToolCatalog(store.db, {
    baseUrl: process.env.SERVICE_BASE_URL?.trim() || 'http://localhost:8787',
  });
  if (parsed.action === 'list') {
    const all = await tools.listForAdmin();
    for (const tool of all) {
      const state = [tool.enabled ? 'enabled' : 'disabled', tool.internal ? 'internal' : '']
        .filter(Boolean)
        .join(',');
      io.stdout(
        `${[tool.slug.padEnd(24), state.padEnd(17), tool.release?.version ?? '-', tool.name].join('  ')}\n`,
      );
    }
    if (all.length === 0) io.stdout('No tools.\n');
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
      io.stdout(`Published ${parsed.slug} ${parsed.version}: now its active release.\n`);
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
  io.stdout(`${parsed.action === 'enable' ? 'Enabled' : 'Disabled'} ${parsed.slug}.\n`);
}

async function run(
  operators: Operators,
  parsed: Exclude<Command, { command: 'help' } | { command: 'integrations' } | { command: 'tools' }>,
  io: AdminIO,
): Promise<void> {
  if (parsed.command === 'tenants') {
    const tenants = await operators.listTenants(parsed);
    for (const tenant of tenants) io.stdout(`${line(tenant)}\n`);
    if (tenants.length === 0) io.stdout('No tenants.\n');
    return;
  }
  const tenantId = await resolveTenant(operators, parsed.tenant);
  const input = { tenantId, operator: operatorName(), reason: parsed.reason };
  try {
    if (parsed.command === 'grant') {
      const granted = await operators.grant({ ...input, amountMicros: parsed.amountMicros });
      io.stdout(
        `Granted USD ${usd(parsed.amountMicros)} to ${tenantId}: balance USD ${usd(granted.balanceAfterMicros)} (ledger entry ${granted.action.ledgerEntryId}).\n`,
      );
    } else if (parsed.command === 'suspend') {
      await operators.suspend(input);
      io.stdout(`Suspended ${tenantId}: its metered calls are refused.\n`);
    } else {
      await operators.resume(input);
      io.stdout(`Resumed ${tenantId}.\n`);
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
