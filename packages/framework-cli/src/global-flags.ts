/**
 * The developer CLI's global flags (`--json`, `--help`, `--version`), read anywhere on the line
 * by the developer CLI's own reader, so one `service` line means the same thing whichever CLI
 * runs it.
 */
import type { GlobalFlags } from '@service/dev-cli';

export {
  commandLine,
  type GlobalFlags,
  helpTakesOneCommand,
  takeGlobalFlags,
  unknownFirstWord,
} from '@service/dev-cli';

/** The global flags again, as arguments: what a delegated command line gets back. */
export function globalFlagArgs(flags: GlobalFlags): string[] {
  return [...(flags.json ? ['--json'] : []), ...(flags.help ? ['--help'] : [])];
}
