import { CliError } from './cli-error.js';

/** `boolean`: a flag; `string`: one value; `strings`: a value per repetition. */
export type OptionKind = 'boolean' | 'string' | 'strings';

export interface ParsedArgs {
  options: Record<string, boolean | string | string[] | undefined>;
  positionals: string[];
}

/**
 * Parses `--name value`, `--name=value` and flags against a command's options; `--` ends them. An unknown option,
 * a missing value or a surplus argument throws (exit 1) before the command does anything.
 */
export function parseArgs(
  command: string,
  args: string[],
  spec: Record<string, OptionKind>,
  maxPositionals: number,
): ParsedArgs {
  const options: ParsedArgs['options'] = {};
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    // `--` ends the options: what follows is an argument, even when it starts with a dash.
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      if (arg.startsWith('-') && arg !== '-') {
        throw new CliError(`service ${command}: unknown option ${arg}`);
      }
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!kind) throw new CliError(`service ${command}: unknown option --${name}`);
    if (kind === 'boolean') {
      if (eq !== -1) throw new CliError(`service ${command}: --${name} takes no value`);
      options[name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      value = args[i + 1];
      if (value === undefined || value.startsWith('--')) value = undefined;
      else i++;
    }
    if (value === undefined || value === '')
      throw new CliError(`service ${command}: --${name} needs a value`);
    if (kind === 'strings') options[name] = [...((options[name] as string[] | undefined) ?? []), value];
    else options[name] = value;
  }
  if (positionals.length > maxPositionals) {
    throw new CliError(`service ${command}: unexpected argument ${positionals[maxPositionals]}`);
  }
  return { options, positionals };
}
