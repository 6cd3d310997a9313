import { callPlatform, messageOf } from '../api.js';
import { parseCommandArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { type CliConfig, configPath, DamagedConfigError, readConfig, removeConfig } from '../config.js';
import type { CliIo } from '../io.js';

/**
 * `service logout`: the stored key revokes itself (`POST /api/cli/logout`), then the config file
 * goes. The file is removed even when the platform cannot be reached, with a warning, so a
 * logout always logs this machine out.
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
    io.stderr.write(
      `Warning: ${error.path} ${error.problem}, so no key could be revoked on the platform. Removed it anyway; revoke the key from the dashboard if it is still live.\n`,
    );
    return 0;
  }
  if (!config) {
    io.stdout.write('Not logged in: nothing to do.\n');
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
  if (warning) {
    io.stderr.write(
      `Warning: could not revoke the key on the platform (${warning}). Removed ${configPath(io)} anyway; revoke the key from the dashboard.\n`,
    );
  } else {
    io.stdout.write(`Logged out: the key is revoked and ${configPath(io)} removed.\n`);
  }
  return 0;
}
