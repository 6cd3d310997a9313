import { callPlatform, messageOf } from '../api.js';
import { parseCommandArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import {
  type CliConfig,
  configPath,
  DamagedConfigError,
  displayKey,
  readConfig,
  removeConfig,
} from '../config.js';
import type { CliIo } from '../io.js';

/**
 * `service logout`: the stored key revokes itself (`POST /api/cli/logout`), then the config file
 * is removed, as the CLI contract says. The file goes even when the platform cannot be reached,
 * with a warning, so a logout always logs this machine out.
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  parseCommandArgs(args, {});
  let config: CliConfig | null;
  try {
    config = await readConfig(io);
  } catch (error) {
    if (!(error instanceof DamagedConfigError)) throw error;
    // No usable key to revoke, but logging this machine out must still work.
    await removeConfig(io);
    const warning = `${error.path} ${error.problem}, so no key could be revoked on the platform. Removed it anyway; revoke the key from the dashboard if it is still live.`;
    report(io, { loggedOut: true, revoked: false, warning }, `Warning: ${warning}\n`, 'stderr');
    return 0;
  }
  if (!config) {
    report(io, { loggedOut: true, revoked: false, warning: null }, 'Not logged in: nothing to do.\n');
    return 0;
  }
  let warning: string | null = null;
  try {
    const answer = await callPlatform(config, 'POST', '/api/cli/logout');
    if (answer.status !== 200) warning = `the platform answered ${answer.status}: ${messageOf(answer)}`;
  } catch (error) {
    // A key the platform already refuses is as good as revoked.
    if (!(error instanceof CliError) || !error.message.includes('rejected the stored key')) {
      warning = error instanceof Error ? error.message : String(error);
    }
  }
  await removeConfig(io);
  const key = displayKey(config.apiKey);
  if (warning) {
    const text = `could not revoke ${key} on the platform (${warning}). Removed it from ${configPath(io)} anyway; revoke it from the dashboard.`;
    report(io, { loggedOut: true, revoked: false, warning: text }, `Warning: ${text}\n`, 'stderr');
  } else {
    report(
      io,
      { loggedOut: true, revoked: true, warning: null },
      `Logged out: ${key} is revoked and removed from ${configPath(io)}.\n`,
    );
  }
  return 0;
}

/** One JSON object with `--json`, else the text on stdout or stderr. */
function report(
  io: CliIo,
  json: { loggedOut: boolean; revoked: boolean; warning: string | null },
  text: string,
  stream: 'stdout' | 'stderr' = 'stdout',
): void {
  if (io.json) io.stdout.write(`${JSON.stringify(json)}\n`);
  else io[stream].write(text);
}
