/**
 * `service cloud …`: answered, not unknown, until the cloud commands exist. The line is read as
 * the cloud commands will read it (so a mistake is named the same way then), and a malformed
 * cloud key is refused as it will be, before anything else. No option's value is printed back:
 * it may be a key.
 */
import { parseArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { checkCloudKey } from '../cloud-key.js';
import type { CliIo } from '../io.js';

const SUBCOMMANDS = new Set([
  'login',
  'logout',
  'whoami',
  'orgs',
  'keys',
  'members',
  'invite',
  'deployments',
  'usage',
  'billing',
  'validate',
  'deploy',
  'share',
  'publish',
  'pin-ship',
]);

/** The subcommands that take the cloud key (`--key`, else `SERVICE_API_KEY`). */
const KEYED = new Set(['validate', 'deploy', 'share', 'publish', 'pin-ship']);

const NOT_AVAILABLE = 'the cloud commands are not available in this version.';

const OPTIONS = {
  'api-url': 'string',
  key: 'string',
  org: 'string',
  token: 'string',
  app: 'strings',
  subject: 'string',
  secret: 'strings',
} as const;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { options, positionals } = parseArgs('cloud', args, OPTIONS, 3);
  const sub = positionals[0];
  if (sub === undefined) throw new CliError(`service cloud: ${NOT_AVAILABLE}`);
  if (!SUBCOMMANDS.has(sub)) {
    // Named only when it reads as a command word: a key given without its option is not echoed.
    const named = /^[a-z][a-z-]{0,30}$/.test(sub) ? ` ${sub}` : '';
    throw new CliError(`service cloud: unknown subcommand${named} (service cloud --help lists them).`);
  }
  const key = (options.key as string | undefined) ?? (KEYED.has(sub) ? io.env.SERVICE_API_KEY : undefined);
  if (key !== undefined) checkCloudKey(`service cloud ${sub}`, key);
  throw new CliError(`service cloud ${sub}: ${NOT_AVAILABLE}`);
}
