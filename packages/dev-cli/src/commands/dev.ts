import { execFile } from 'node:child_process';
import { chmod, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCommandArgs } from '../args.js';
import { CliError, systemReason, USAGE } from '../cli-error.js';
import { KEY_PATTERN, requireConfig } from '../config.js';
import type { CliIo } from '../io.js';
import { checkManifest } from '../manifest.js';

export const DEV_ENV_FILE = '.env.service-dev';

/** `llm-gateway` -> `LLM_GATEWAY`: the prefix of an integration's variables. */
export function envPrefixOf(slug: string): string {
  return slug.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
}

/**
 * `service dev`: writes `.env.service-dev` (mode 0600) with the variables each client reads:
 * `SERVICE_CLI_KEY` (the stored CLI key: the `service` CLI's own routes), `SERVICE_API_KEY` only
 * from `--app-key` (the SDK's connections and events take an App Key, which the CLI key is not),
 * the tenant and platform URL, and `<SLUG>_API_KEY` / `<SLUG>_BASE_URL` for each integration in
 * ./service.yaml, pointing provider SDKs at the platform's metering proxy (`{apiBase}/proxy/{slug}`).
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(args, { 'app-key': { type: 'string' } });
  const appKey = values['app-key']?.trim();
  // The whole key's shape, not only its prefix: it is written as a line of the env file.
  if (values['app-key'] !== undefined && !KEY_PATTERN.test(appKey ?? '')) {
    throw new CliError('--app-key must be an App Key (service_sk_…), copied from the dashboard', USAGE);
  }
  const config = await requireConfig(io);
  const integrations = await manifestIntegrations(io);
  const lines = [
    `# Written by service dev at ${new Date().toISOString()}. Holds a secret: keep it out of version control.`,
    `SERVICE_BASE_URL=${config.apiBase}`,
    `SERVICE_CLI_KEY=${config.apiKey}`,
    appKey
      ? `SERVICE_API_KEY=${appKey}`
      : "# SERVICE_API_KEY=<your app's App Key>: @service/sdk's connections and events need it; run service dev --app-key <key>",
    `SERVICE_TENANT_ID=${config.tenantId}`,
  ];
  for (const slug of integrations ?? []) {
    const prefix = envPrefixOf(slug);
    // The CLI key reaches any connected connection of the tenant; an App Key only its bindings.
    lines.push(`${prefix}_API_KEY=${config.apiKey}`, `${prefix}_BASE_URL=${config.apiBase}/proxy/${slug}`);
  }
  const path = join(io.cwd, DEV_ENV_FILE);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, `${lines.join('\n')}\n`, { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (error) {
    // A folder it may not write in, or a folder by that name: said as such, no copy of the key left.
    await rm(temporary, { force: true }).catch(() => {});
    throw new CliError(
      `Could not write ${DEV_ENV_FILE} in ${io.cwd} (${systemReason(error)}). Nothing was written.`,
      1,
      { cause: error },
    );
  }

  const ignored = await ignoredByGit(io);
  const variables = lines.filter((line) => !line.startsWith('#')).map((line) => line.split('=')[0]!);
  if (io.json) {
    io.stdout.write(
      `${JSON.stringify({ file: DEV_ENV_FILE, variables, appKey: appKey !== undefined, gitignored: ignored })}\n`,
    );
    return 0;
  }
  const count = integrations?.length ?? 0;
  io.stdout.write(
    `Wrote ${DEV_ENV_FILE} (mode 600): platform, CLI key${appKey ? ', App Key' : ''} and tenant${count ? `, and proxy variables for ${integrations!.join(', ')}` : ''}.\n`,
  );
  if (!appKey) {
    io.stdout.write(
      "No App Key given: SERVICE_API_KEY is not set, so @service/sdk's connections and events would be refused. Add --app-key <key> to set it.\n",
    );
  }
  if (integrations === null) io.stdout.write('No service.yaml here: no provider variables were written.\n');
  if (!ignored) {
    io.stderr.write(`Warning: add ${DEV_ENV_FILE} to .gitignore; it holds your key.\n`);
  }
  return 0;
}

/** Integrations of ./service.yaml; null when there is none; an error when it is invalid. */
async function manifestIntegrations(io: CliIo): Promise<string[] | null> {
  let source: string;
  try {
    source = await readFile(join(io.cwd, 'service.yaml'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    // There is one, but not readable (a folder of that name, no permission): not "no service.yaml".
    throw new CliError(`Could not read service.yaml (${systemReason(error)}). Nothing was written.`, 1, {
      cause: error,
    });
  }
  const result = checkManifest(source);
  if (!result.ok) {
    throw new CliError('service.yaml has problems; run service validate to see them. Nothing was written.');
  }
  return result.manifest.integrations ?? [];
}

/**
 * Whether git would leave the file out: asked of git itself (every `.gitignore` up to the
 * repository's root, negations and global excludes included); outside a repository, or without
 * git, read from the folder's `.gitignore`.
 */
async function ignoredByGit(io: CliIo): Promise<boolean> {
  const answer = await new Promise<boolean | null>((resolve) => {
    execFile('git', ['check-ignore', '--quiet', DEV_ENV_FILE], { cwd: io.cwd, timeout: 5000 }, (error) => {
      if (!error) resolve(true);
      else resolve((error as { code?: unknown }).code === 1 ? false : null);
    });
  });
  if (answer !== null) return answer;
  try {
    const ignore = await readFile(join(io.cwd, '.gitignore'), 'utf8');
    return ignore
      .split('\n')
      .map((line) => line.trim())
      .some(
        (line) =>
          line === DEV_ENV_FILE || line === `/${DEV_ENV_FILE}` || line === '.env*' || line === '.env.*',
      );
  } catch {
    return false;
  }
}
