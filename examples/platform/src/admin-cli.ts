import { parseArgs } from 'node:util';
import type { Store } from '@service/core/store';

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
export const REFUSED = 1;
const USAGE_ERROR = 2;
export const STORE_UNAVAILABLE = 3;

/** Ends the run with an exit code and a message for stderr. */
export class Exit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const usage = (problem: string) => new Exit(USAGE_ERROR, `${problem}\n\n${USAGE}`);

/** Where a run writes, and the store it works on. */
export interface AdminIO {
  /** What was done (the process's stdout). */
  stdout(text: string): void;
  /** Why nothing was done: a usage error, a refusal, a store that cannot be opened (stderr). */
  stderr(text: string): void;
  /**
   * An open store to work on, left open afterwards. Unset (as `pnpm admin` runs it): the store
   * `pnpm start` uses, opened for the run and closed after it.
   */
  store?: Store;
}

/**
 * `pnpm admin`: the operators' actions from a shell, on the store `pnpm start` uses
 * (`DATABASE_URL`, else the embedded store at `SERVICE_DATA_DIR`). Each action writes its audit
 * row, as the admin API does. Resolves to the exit code; `admin.ts` runs it as the process.
 *
 * @see docs/operators.md
 */
export async function main(argv: string[], io: AdminIO): Promise<number> {
  try {
    await runCommand(argv, io);
    return 0;
  } catch (error) {
    if (error instanceof Exit) {
      io.stderr(`${error.message}\n`);
      return error.code;
    }
    io.stderr(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return STORE_UNAVAILABLE;
  }
}

async function runCommand(argv: string[], io: AdminIO): Promise<void> {
  const parsed = await parseCommand(argv);
  if (parsed.command === 'help') {
    io.stdout(`${USAGE}\n`);
    return;
  }
  // Loaded once the command line is good: the platform's modules take seconds to load, which a
  // usage error or --help need not wait for.
  const { execute } = await import('./admin-commands.js');
  await execute(parsed, io);
}

export type Command =
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

async function parseCommand(argv: string[]): Promise<Command> {
  let options: ReturnType<typeof parseOptions>;
  try {
    options = parseOptions(argv);
  } catch (error) {
    throw usage((error as Error).message);
  }
  const { values, positionals } = options;
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
      // The bound on a grant is billing's; that module is loaded for a grant only.
      const { MAX_GRANT_MICROS } = await import('@service/core/billing');
      return {
        command,
        tenant: tenant!,
        amountMicros: grantMicros(usd!, MAX_GRANT_MICROS),
        reason: needReason(),
      };
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

const parseOptions = (argv: string[]) =>
  parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      reason: { type: 'string' },
      limit: { type: 'string' },
      offset: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });

/** Whole cents, more than 0 and at most the largest grant. */
function grantMicros(usd: string, maxMicros: number): number {
  const micros = /^\d{1,6}(\.\d{1,2})?$/.test(usd) ? Math.round(Number(usd) * 100) * 10_000 : Number.NaN;
  if (!(micros > 0 && micros <= maxMicros)) {
    throw usage(`The amount must be USD in whole cents, more than 0 and at most ${maxMicros / 1e6}: ${usd}`);
  }
  return micros;
}

function count(value: string | undefined, fallback: number, min: number, max: number, name: string): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw usage(`${name} must be a whole number from ${min} to ${max}`);
  return n;
}
