import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCommandArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { requireConfig } from '../config.js';
import type { CliIo } from '../io.js';
import { checkManifest } from '../manifest.js';

export const DEV_ENV_FILE = '.env.service-dev';

/** `llm-gateway` -> `LLM_GATEWAY`: the prefix of an integration's variables. */
export function envPrefixOf(slug: string): string {
  return slug.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
}

/**
 * `service dev`: writes `.env.service-dev` (mode 0600) with the stored key, tenant and platform
 * URL, and `<SLUG>_API_KEY` / `<SLUG>_BASE_URL` for each integration in ./service.yaml, pointing
 * provider SDKs at the platform's metering proxy (`{apiBase}/proxy/{slug}`).
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  parseCommandArgs(args, {});
  const config = await requireConfig(io);
  const integrations = await manifestIntegrations(io);
  const lines = [
    `# Written by service dev at ${new Date().toISOString()}. Holds a secret: keep it out of version control.`,
    `SERVICE_BASE_URL=${config.apiBase}`,
    `SERVICE_API_KEY=${config.apiKey}`,
    `SERVICE_TENANT_ID=${config.tenantId}`,
  ];
  for (const slug of integrations ?? []) {
    const prefix = envPrefixOf(slug);
    lines.push(`${prefix}_API_KEY=${config.apiKey}`, `${prefix}_BASE_URL=${config.apiBase}/proxy/${slug}`);
  }
  const path = join(io.cwd, DEV_ENV_FILE);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${lines.join('\n')}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);

  const count = integrations?.length ?? 0;
  io.stdout.write(
    `Wrote ${DEV_ENV_FILE} (mode 600): platform, key and tenant${count ? `, and proxy variables for ${integrations!.join(', ')}` : ''}.\n`,
  );
  if (integrations === null) io.stdout.write('No service.yaml here: no provider variables were written.\n');
  if (!(await ignoredByGit(io))) {
    io.stderr.write(`Warning: add ${DEV_ENV_FILE} to .gitignore; it holds your key.\n`);
  }
  return 0;
}

/** Integrations of ./service.yaml; null when there is none; an error when it is invalid. */
async function manifestIntegrations(io: CliIo): Promise<string[] | null> {
  let source: string;
  try {
    source = await readFile(join(io.cwd, 'service.yaml'), 'utf8');
  } catch {
    return null;
  }
  const result = checkManifest(source);
  if (!result.ok) {
    throw new CliError('service.yaml has problems; run service validate to see them. Nothing was written.');
  }
  return result.manifest.integrations ?? [];
}

async function ignoredByGit(io: CliIo): Promise<boolean> {
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
