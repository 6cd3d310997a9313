import { parseArgs } from 'node:util';
import { CliError, USAGE } from './cli-error.js';
import { globalFlagGivenValue, takesNoValue } from './global-flags.js';

/** Options a command takes, by long name. */
export type OptionSpecs = Record<string, { type: 'string' | 'boolean'; short?: string }>;

export interface ParsedArgs<T extends OptionSpecs> {
  values: { [K in keyof T]?: T[K]['type'] extends 'string' ? string : boolean };
  positionals: string[];
}

/**
 * Node's own argument parser, strict, with short messages: an unknown option or a stray argument
 * is a usage error (exit 2).
 */
export function parseCommandArgs<T extends OptionSpecs>(
  args: string[],
  options: T,
  maxPositionals = 0,
): ParsedArgs<T> {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const name = /'([^']+)'/.exec((error as Error).message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      // `--json=false` reaches here: the global flags are taken only as bare words.
      const valued = args.map(globalFlagGivenValue).find((flag) => flag !== null && flag === name);
      if (valued) throw new CliError(takesNoValue(valued), USAGE);
      throw new CliError(`Unknown option: ${name ?? args.join(' ')}`, USAGE);
    }
    throw new CliError((error as Error).message.split('. ')[0]!, USAGE);
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new CliError(`Unexpected argument: ${parsed.positionals[maxPositionals]}`, USAGE);
  }
  return parsed as ParsedArgs<T>;
}
